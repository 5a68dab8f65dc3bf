#ifndef GATE_CSDBUS_SHIM_H
#define GATE_CSDBUS_SHIM_H

/* sd-bus, libsystemd's D-Bus client, for desktop notifications (docs/CONTRACT.md#desktop).
 * Linked, not loaded: libsystemd0 is on every Debian and Raspberry Pi OS system (systemd is
 * their init), so every install has it (docs/ARCHITECTURE.md#targets-and-what-each-may-import).
 *
 * Why sd-bus, and not libnotify or GDBus: libnotify is a package of its own that pulls in
 * GDK-Pixbuf. sd-bus is synchronous and runs no thread or main loop of its own (GDBus starts a
 * worker thread for every connection), and every call needed here has a non-variadic form
 * (`sd_bus_message_append_basic`, `sd_bus_message_open_container`), which Swift can call;
 * GVariant building would need `g_variant_builder_*` for the same result, through three
 * libraries (GLib, GObject, GIO). Building needs libsystemd-dev. */

#include <systemd/sd-bus.h>

#endif
