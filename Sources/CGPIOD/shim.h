#ifndef GATE_CGPIOD_SHIM_H
#define GATE_CGPIOD_SHIM_H

/* libgpiod 1.6 (the v1 API, Debian 12's libgpiod2), linked: the package depends on it. */

#include <gpiod.h>

/* The header's constants live in anonymous enums; these give Swift an Int32. */
static inline int gate_gpiod_flag_bias_pull_up(void) { return GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP; }
static inline int gate_gpiod_flag_bias_pull_down(void) { return GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN; }
static inline int gate_gpiod_event_rising(void) { return GPIOD_LINE_EVENT_RISING_EDGE; }
static inline int gate_gpiod_event_falling(void) { return GPIOD_LINE_EVENT_FALLING_EDGE; }

#endif
