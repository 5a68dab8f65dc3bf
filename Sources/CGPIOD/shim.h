#ifndef GATE_CGPIOD_SHIM_H
#define GATE_CGPIOD_SHIM_H

/* libgpiod (1.6, the v1 API) is loaded with dlopen when the button is first
 * used, not linked: only `gate daemon` reads a GPIO line, and every other
 * command's start (about 10 ms, measured) should not pay for loading it. The
 * prototypes still come from gpiod.h (Debian: libgpiod-dev), so the table below
 * cannot drift from the library's real signatures. */

#include <dlfcn.h>
#include <stddef.h>
#include <gpiod.h>

#define GATE_GPIOD_FUNCTIONS(X) \
    X(chip_open_lookup) X(chip_close) X(chip_get_line) \
    X(line_request_both_edges_events_flags) X(line_event_get_fd) \
    X(line_event_read_fd) X(line_release)

struct gate_gpiod_api {
#define GATE_GPIOD_FIELD(name) __typeof__(gpiod_##name) *name;
    GATE_GPIOD_FUNCTIONS(GATE_GPIOD_FIELD)
#undef GATE_GPIOD_FIELD
};

/* Fills `api` from libgpiod.so.2 (the soname of libgpiod 1.x; 2.x is .so.3 with
 * another API). Returns NULL on success, or the loader's words (dlerror). */
static inline const char *gate_gpiod_load(struct gate_gpiod_api *api) {
    void *library = dlopen("libgpiod.so.2", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return dlerror();
#define GATE_GPIOD_LOAD(name) \
    api->name = (__typeof__(gpiod_##name) *)dlsym(library, "gpiod_" #name); \
    if (api->name == NULL) return dlerror();
    GATE_GPIOD_FUNCTIONS(GATE_GPIOD_LOAD)
#undef GATE_GPIOD_LOAD
    return NULL;
}

/* The header's constants live in anonymous enums; these give Swift an Int32. */
static inline int gate_gpiod_flag_bias_pull_up(void) { return GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP; }
static inline int gate_gpiod_flag_bias_pull_down(void) { return GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN; }
static inline int gate_gpiod_event_rising(void) { return GPIOD_LINE_EVENT_RISING_EDGE; }
static inline int gate_gpiod_event_falling(void) { return GPIOD_LINE_EVENT_FALLING_EDGE; }

#endif
