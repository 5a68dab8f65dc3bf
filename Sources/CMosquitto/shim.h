#ifndef GATE_CMOSQUITTO_SHIM_H
#define GATE_CMOSQUITTO_SHIM_H

/* libmosquitto is loaded with dlopen the first time MQTT is used, not linked: it
 * is optional at run time (the package recommends libmosquitto1; a UDP-only gate
 * runs without it, and says what is missing when MQTT is configured). The
 * prototypes still come from mosquitto.h, so the table below cannot drift from
 * the library's real signatures. */

#include <dlfcn.h>
#include <stddef.h>
#include <mosquitto.h>

#define GATE_MOSQ_FUNCTIONS(X) \
    X(lib_init) X(new) X(destroy) X(username_pw_set) X(tls_set) X(int_option) \
    X(tls_opts_set) X(tls_insecure_set) X(reconnect_delay_set) X(connect) \
    X(loop_start) X(loop_stop) X(loop) X(socket) X(subscribe) X(publish) X(disconnect) X(strerror) \
    X(connack_string) X(connect_callback_set) X(disconnect_callback_set) \
    X(subscribe_callback_set) X(publish_callback_set) X(message_callback_set) \
    X(log_callback_set) X(will_set) X(subscribe_v5)

struct gate_mosquitto_api {
#define GATE_MOSQ_FIELD(name) __typeof__(mosquitto_##name) *name;
    GATE_MOSQ_FUNCTIONS(GATE_MOSQ_FIELD)
#undef GATE_MOSQ_FIELD
};

/* Fills `api` from libmosquitto.so.1. Returns NULL on success, or the loader's
 * words (dlerror) naming what is missing. */
static inline const char *gate_mosquitto_load(struct gate_mosquitto_api *api) {
    void *library = dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return dlerror();
#define GATE_MOSQ_LOAD(name) \
    api->name = (__typeof__(mosquitto_##name) *)dlsym(library, "mosquitto_" #name); \
    if (api->name == NULL) return dlerror();
    GATE_MOSQ_FUNCTIONS(GATE_MOSQ_LOAD)
#undef GATE_MOSQ_LOAD
    return NULL;
}

static inline int gate_mosq_err_success(void) { return MOSQ_ERR_SUCCESS; }
static inline int gate_mosq_err_errno(void) { return MOSQ_ERR_ERRNO; }
static inline int gate_mosq_opt_tls_use_os_certs(void) { return MOSQ_OPT_TLS_USE_OS_CERTS; }

#endif
