#ifndef GATE_CLIBSECRET_SHIM_H
#define GATE_CLIBSECRET_SHIM_H

/* libsecret (the Secret Service client) is loaded with dlopen the first time a
 * password is looked up or stored, never linked: it pulls in GLib, GObject and
 * GIO, and linking them would make the dynamic loader map and relocate them on
 * every `gate` start, which a UDP opening or `gate status` should not pay.
 *
 * Why the declarations are written here instead of including <libsecret/secret.h>:
 * that header needs GLib's include paths, and the only way SwiftPM gives them to
 * a system library is `pkgConfig:`, which also puts `-lsecret-1 -lgio-2.0
 * -lgobject-2.0 -lglib-2.0` on the link of every product that uses it. So the
 * few types and prototypes gate needs are declared below, matching libsecret
 * 0.20.5 and GLib 2.74 (Debian 12, Raspberry Pi OS bookworm); both libraries
 * keep these ABIs stable across their whole major version.
 *
 * They are checked against the real headers: compiled after
 * <libsecret/secret.h> with GATE_SECRET_CHECK_PROTOTYPES defined, this file
 * asserts that every entry of the function table has exactly the type of the
 * real prototype (GateSecretTests runs that check with the system compiler).
 * Building gate itself needs no libsecret headers at all; running it needs
 * the package libsecret-1-0 only when the Secret Service is used. */

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#ifndef __SECRET_H__
/* ---- hand-written declarations (skipped when the real headers came first) ---- */
typedef char gchar;
typedef int gint;
typedef unsigned int guint;
typedef gint gboolean;
typedef void *gpointer;
typedef const void *gconstpointer;
typedef uint32_t GQuark;

typedef struct _GHashTable GHashTable;
typedef struct _GList GList;
typedef struct _GCancellable GCancellable;
typedef struct _GError GError;
struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
};
typedef guint (*GHashFunc)(gconstpointer key);
typedef gboolean (*GEqualFunc)(gconstpointer a, gconstpointer b);
typedef void (*GDestroyNotify)(gpointer data);

/* Public but only ever handled through a pointer from secret_schema_newv. */
typedef struct gate_secret_schema SecretSchema;
typedef enum {
    SECRET_SCHEMA_NONE = 0,
    SECRET_SCHEMA_DONT_MATCH_NAME = 1 << 1
} SecretSchemaFlags;
typedef enum {
    SECRET_SCHEMA_ATTRIBUTE_STRING = 0,
    SECRET_SCHEMA_ATTRIBUTE_INTEGER = 1,
    SECRET_SCHEMA_ATTRIBUTE_BOOLEAN = 2
} SecretSchemaAttributeType;
typedef enum {
    SECRET_SEARCH_NONE = 0,
    SECRET_SEARCH_ALL = 1 << 1,
    SECRET_SEARCH_UNLOCK = 1 << 2,
    SECRET_SEARCH_LOAD_SECRETS = 1 << 3
} SecretSearchFlags;
typedef enum {
    SECRET_ERROR_PROTOCOL = 1,
    SECRET_ERROR_IS_LOCKED = 2,
    SECRET_ERROR_NO_SUCH_OBJECT = 3,
    SECRET_ERROR_ALREADY_EXISTS = 4
} SecretError;
/* GDBusError: the bus cannot start, or nobody owns, the requested name; the object
 * (a collection that could not be created) does not exist. */
enum {
    GATE_G_DBUS_ERROR_SERVICE_UNKNOWN = 2,
    GATE_G_DBUS_ERROR_NAME_HAS_NO_OWNER = 3,
    GATE_G_DBUS_ERROR_UNKNOWN_METHOD = 19,
    GATE_G_DBUS_ERROR_UNKNOWN_OBJECT = 41
};
#else
enum {
    GATE_G_DBUS_ERROR_SERVICE_UNKNOWN = G_DBUS_ERROR_SERVICE_UNKNOWN,
    GATE_G_DBUS_ERROR_NAME_HAS_NO_OWNER = G_DBUS_ERROR_NAME_HAS_NO_OWNER,
    GATE_G_DBUS_ERROR_UNKNOWN_METHOD = G_DBUS_ERROR_UNKNOWN_METHOD,
    GATE_G_DBUS_ERROR_UNKNOWN_OBJECT = G_DBUS_ERROR_UNKNOWN_OBJECT
};
#endif

/* Every function gate calls: name, return type, parameters, exactly as in
 * secret-password.h, secret-schema.h, secret-types.h, ghash.h, glist.h,
 * gstrfuncs.h, gmem.h, gerror.h, gquark.h, gobject.h, gioerror.h, gdbuserror.h. */
#define GATE_SECRET_FUNCTIONS(X) \
    X(secret_schema_newv, SecretSchema *, \
      (const gchar *name, SecretSchemaFlags flags, GHashTable *attribute_names_and_types)) \
    X(secret_schema_unref, void, (SecretSchema *schema)) \
    X(secret_password_storev_sync, gboolean, \
      (const SecretSchema *schema, GHashTable *attributes, const gchar *collection, const gchar *label, \
       const gchar *password, GCancellable *cancellable, GError **error)) \
    X(secret_password_lookupv_nonpageable_sync, gchar *, \
      (const SecretSchema *schema, GHashTable *attributes, GCancellable *cancellable, GError **error)) \
    X(secret_password_clearv_sync, gboolean, \
      (const SecretSchema *schema, GHashTable *attributes, GCancellable *cancellable, GError **error)) \
    X(secret_password_searchv_sync, GList *, \
      (const SecretSchema *schema, GHashTable *attributes, SecretSearchFlags flags, GCancellable *cancellable, \
       GError **error)) \
    X(secret_password_free, void, (gchar *password)) \
    X(secret_error_get_quark, GQuark, (void)) \
    X(g_hash_table_new_full, GHashTable *, \
      (GHashFunc hash_func, GEqualFunc key_equal_func, GDestroyNotify key_destroy_func, \
       GDestroyNotify value_destroy_func)) \
    X(g_hash_table_insert, gboolean, (GHashTable *hash_table, gpointer key, gpointer value)) \
    X(g_hash_table_unref, void, (GHashTable *hash_table)) \
    X(g_str_hash, guint, (gconstpointer v)) \
    X(g_str_equal, gboolean, (gconstpointer v1, gconstpointer v2)) \
    X(g_strdup, gchar *, (const gchar *str)) \
    X(g_free, void, (gpointer mem)) \
    X(g_list_free_full, void, (GList *list, GDestroyNotify free_func)) \
    X(g_object_unref, void, (gpointer object)) \
    X(g_error_free, void, (GError *error)) \
    X(g_io_error_quark, GQuark, (void)) \
    X(g_dbus_error_quark, GQuark, (void))

struct gate_secret_api {
#define GATE_SECRET_FIELD(name, result, parameters) result (*name) parameters;
    GATE_SECRET_FUNCTIONS(GATE_SECRET_FIELD)
#undef GATE_SECRET_FIELD
};

#ifdef GATE_SECRET_CHECK_PROTOTYPES
#define GATE_SECRET_CHECK(name, result, parameters) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(name) *, result (*) parameters), \
                   #name " differs from the real prototype");
GATE_SECRET_FUNCTIONS(GATE_SECRET_CHECK)
#undef GATE_SECRET_CHECK
_Static_assert(sizeof(GQuark) == sizeof(uint32_t) && sizeof(gboolean) == sizeof(int), "GLib scalar types");
_Static_assert(offsetof(GError, domain) == 0 && offsetof(GError, code) == 4 && offsetof(GError, message) == 8,
               "GError layout");
_Static_assert(SECRET_ERROR_IS_LOCKED == 2 && SECRET_ERROR_NO_SUCH_OBJECT == 3 && SECRET_SCHEMA_DONT_MATCH_NAME == 2
               && SECRET_SEARCH_ALL == 2 && SECRET_SCHEMA_ATTRIBUTE_STRING == 0, "libsecret enumerations");
_Static_assert(G_DBUS_ERROR_SERVICE_UNKNOWN == 2 && G_DBUS_ERROR_NAME_HAS_NO_OWNER == 3
               && G_DBUS_ERROR_UNKNOWN_METHOD == 19 && G_DBUS_ERROR_UNKNOWN_OBJECT == 41, "GDBusError codes");
#endif

/* Fills `api` from libsecret-1.so.0 (and, through it, GLib, GObject and GIO).
 * Returns NULL on success, or the loader's words (dlerror) naming what is missing. */
static inline const char *gate_secret_load(struct gate_secret_api *api) {
    void *library = dlopen("libsecret-1.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return dlerror();
#define GATE_SECRET_LOAD(name, result, parameters) \
    api->name = (result (*) parameters)dlsym(library, #name); \
    if (api->name == NULL) return dlerror();
    GATE_SECRET_FUNCTIONS(GATE_SECRET_LOAD)
#undef GATE_SECRET_LOAD
    return NULL;
}

/* The C-variadic schema and attribute calls of libsecret cannot be called from
 * Swift; these build the same things for the non-variadic (`v`) calls. */

/* A schema with string attributes `service` and `account`. Free with secret_schema_unref. */
static inline SecretSchema *gate_secret_schema_new(const struct gate_secret_api *api, const char *name,
                                                   SecretSchemaFlags flags) {
    GHashTable *types = api->g_hash_table_new_full(api->g_str_hash, api->g_str_equal, NULL, NULL);
    /* GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING): the type is carried in the pointer value. */
    api->g_hash_table_insert(types, (gpointer) "service", (gpointer)(intptr_t)SECRET_SCHEMA_ATTRIBUTE_STRING);
    api->g_hash_table_insert(types, (gpointer) "account", (gpointer)(intptr_t)SECRET_SCHEMA_ATTRIBUTE_STRING);
    SecretSchema *schema = api->secret_schema_newv(name, flags, types); /* copies the names */
    api->g_hash_table_unref(types);
    return schema;
}

/* `service=<service>, account=<account>`, both copied. Free with g_hash_table_unref. */
static inline GHashTable *gate_secret_attributes_new(const struct gate_secret_api *api, const char *service,
                                                     const char *account) {
    GHashTable *attributes = api->g_hash_table_new_full(api->g_str_hash, api->g_str_equal, api->g_free, api->g_free);
    api->g_hash_table_insert(attributes, api->g_strdup("service"), api->g_strdup(service));
    api->g_hash_table_insert(attributes, api->g_strdup("account"), api->g_strdup(account));
    return attributes;
}

/* Frees what secret_password_searchv_sync returned (a list of GObjects). */
static inline void gate_secret_list_free(const struct gate_secret_api *api, GList *list) {
    api->g_list_free_full(list, api->g_object_unref);
}

#endif
