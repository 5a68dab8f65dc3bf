#ifndef GATE_CSDBUS_SHIM_H
#define GATE_CSDBUS_SHIM_H

/* sd-bus, libsystemd's D-Bus client, for desktop notifications (docs/CONTRACT.md#desktop). It is
 * loaded with dlopen the first time `gate daemon` shows a notification, never
 * linked: no other command talks D-Bus, and a UDP opening or `gate status` should
 * not map libsystemd on every start.
 *
 * Why sd-bus, and not libnotify or GDBus: libsystemd0 is on every Debian and
 * Raspberry Pi OS system (systemd is their init), so it is no new dependency;
 * libnotify is a package of its own that pulls in GDK-Pixbuf. sd-bus is
 * synchronous and runs no thread or main loop of its own (GDBus starts a worker
 * thread for every connection), and every call needed here has a non-variadic
 * form (`sd_bus_message_append_basic`, `sd_bus_message_open_container`), which
 * Swift can call; GVariant building would need `g_variant_builder_*` for the
 * same result, through three libraries (GLib, GObject, GIO).
 *
 * Why the declarations are written here instead of including <systemd/sd-bus.h>:
 * building gate should not need libsystemd-dev. They match libsystemd 252 (Debian
 * 12, Raspberry Pi OS bookworm); sd-bus keeps its ABI stable across versions.
 * They are checked against the real header: compiled after <systemd/sd-bus.h>
 * with GATE_SDBUS_CHECK_PROTOTYPES defined, this file asserts that every entry of
 * the function table has exactly the type of the real prototype (NotifyTests runs
 * that check with the system compiler). */

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#ifndef SD_BUS_ERROR_NULL
/* ---- hand-written declarations (skipped when the real header came first) ---- */
typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;
typedef struct {
    const char *name;
    const char *message;
    int _need_free;
} sd_bus_error;
#endif

/* Every function gate calls: name, return type, parameters, exactly as in sd-bus.h. */
#define GATE_SDBUS_FUNCTIONS(X) \
    X(sd_bus_open_user, int, (sd_bus **ret)) \
    X(sd_bus_flush_close_unref, sd_bus *, (sd_bus *bus)) \
    X(sd_bus_is_open, int, (sd_bus *bus)) \
    X(sd_bus_call, int, \
      (sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error, sd_bus_message **reply)) \
    X(sd_bus_message_new_method_call, int, \
      (sd_bus *bus, sd_bus_message **m, const char *destination, const char *path, const char *interface, \
       const char *member)) \
    X(sd_bus_message_unref, sd_bus_message *, (sd_bus_message *m)) \
    X(sd_bus_message_append_basic, int, (sd_bus_message *m, char type, const void *p)) \
    X(sd_bus_message_open_container, int, (sd_bus_message *m, char type, const char *contents)) \
    X(sd_bus_message_close_container, int, (sd_bus_message *m)) \
    X(sd_bus_message_read_basic, int, (sd_bus_message *m, char type, void *p)) \
    X(sd_bus_error_free, void, (sd_bus_error *e))

struct gate_sdbus_api {
#define GATE_SDBUS_FIELD(name, result, parameters) result (*name) parameters;
    GATE_SDBUS_FUNCTIONS(GATE_SDBUS_FIELD)
#undef GATE_SDBUS_FIELD
};

#ifdef GATE_SDBUS_CHECK_PROTOTYPES
#define GATE_SDBUS_CHECK(name, result, parameters) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(name) *, result (*) parameters), \
                   #name " differs from the real prototype");
GATE_SDBUS_FUNCTIONS(GATE_SDBUS_CHECK)
#undef GATE_SDBUS_CHECK
_Static_assert(offsetof(sd_bus_error, name) == 0 && offsetof(sd_bus_error, message) == sizeof(void *)
               && offsetof(sd_bus_error, _need_free) == 2 * sizeof(void *), "sd_bus_error layout");
#endif

/* Fills `api` from libsystemd.so.0. Returns NULL on success, or the loader's words
 * (dlerror) naming what is missing. */
static inline const char *gate_sdbus_load(struct gate_sdbus_api *api) {
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return dlerror();
#define GATE_SDBUS_LOAD(name, result, parameters) \
    api->name = (result (*) parameters)dlsym(library, #name); \
    if (api->name == NULL) return dlerror();
    GATE_SDBUS_FUNCTIONS(GATE_SDBUS_LOAD)
#undef GATE_SDBUS_LOAD
    return NULL;
}

#endif
