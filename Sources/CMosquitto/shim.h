#ifndef GATE_CMOSQUITTO_SHIM_H
#define GATE_CMOSQUITTO_SHIM_H

#include <mosquitto.h>

/* Constants that are enum members in mosquitto.h but easier to use as plain ints. */
static inline int gate_mosq_err_success(void) { return MOSQ_ERR_SUCCESS; }
static inline int gate_mosq_err_errno(void) { return MOSQ_ERR_ERRNO; }

#endif
