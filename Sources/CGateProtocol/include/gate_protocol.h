/*
 * gate_protocol.h: protocol v2 between gate and its ESP32 relay, in portable C99.
 *
 * One core for the three codebases that speak v2: the appliance (gate), the simulator
 * (esp32-sim) and the reference firmware (firmware/). The frame is 32 bytes:
 *
 *   0 ver (2) | 1 type | 2 key_id | 3 gate | 4..7 epoch | 8..15 counter | 16..31 tag
 *
 * big-endian, the tag being the first 16 bytes of HMAC-SHA256(direction key, bytes 0..15).
 * Requests are signed with K_c2d = HMAC-SHA256(K, "gate v2 c2d"), replies with
 * K_d2c = HMAC-SHA256(K, "gate v2 d2c"), so that a reply can never pass for a request.
 *
 * No I/O, no allocation, no clock, no random source: callers pass the time (`now_ms`,
 * any monotonic milliseconds) and random numbers in, and get fixed-size results out.
 * Only memcpy, memset and memcmp of the C library are used.
 *
 * The ESP32's rules are a state machine (gate_device): each entry point takes one event
 * (a datagram, an MQTT message, the passing of time) and fills a gate_actions list that
 * the port carries out in order (relay GPIO, UDP datagrams, MQTT publications).
 */
#ifndef GATE_PROTOCOL_H
#define GATE_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GATE_VERSION 2
#define GATE_FRAME_SIZE 32
#define GATE_FRAME_HEX_SIZE 64 /* a frame on MQTT: 64 lowercase hex characters */
#define GATE_SIGNED_SIZE 16    /* bytes 0..15, covered by the tag */
#define GATE_TAG_SIZE 16
#define GATE_KEY_SIZE 32 /* a provisioned key K */
#define GATE_KEY_HEX_SIZE 64
#define GATE_SHA256_SIZE 32

/* The frame's type byte. 0 is no type: what a check returns for "not for you". */
typedef enum {
    GATE_TYPE_NONE = 0x00,
    GATE_TYPE_OPEN = 0x10,
    GATE_TYPE_STATUS_QUERY = 0x11,
    GATE_TYPE_RELAY_ON = 0x90,
    GATE_TYPE_RELAY_OFF = 0x91,
    GATE_TYPE_STATUS = 0x92,
    GATE_TYPE_BUSY = 0x93,
    GATE_TYPE_STATUS_V1_ACCEPTED = 0x94, /* 0x92, while v1 requests are still accepted */
    GATE_TYPE_STALE_EPOCH = 0x9E
} gate_type;

/* ---- SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104) ---- */

typedef struct {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t used; /* bytes waiting in block */
} gate_sha256_context;

void gate_sha256_init(gate_sha256_context *context);
void gate_sha256_update(gate_sha256_context *context, const uint8_t *data, size_t length);
void gate_sha256_final(gate_sha256_context *context, uint8_t digest[GATE_SHA256_SIZE]);
void gate_sha256(const uint8_t *data, size_t length, uint8_t digest[GATE_SHA256_SIZE]);
void gate_hmac_sha256(const uint8_t *key, size_t key_length, const uint8_t *message,
                      size_t message_length, uint8_t mac[GATE_SHA256_SIZE]);

/* True when the n bytes are equal; takes the same time wherever they differ. */
bool gate_equal_in_constant_time(const uint8_t *a, const uint8_t *b, size_t n);

/* Overwrites n bytes with zeros in a way the compiler cannot drop (keys on the stack). */
void gate_wipe(void *bytes, size_t n);

/* ---- Keys ---- */

typedef struct {
    uint8_t c2d[GATE_SHA256_SIZE]; /* signs requests (client to device) */
    uint8_t d2c[GATE_SHA256_SIZE]; /* signs replies (device to client) */
} gate_direction_keys;

void gate_direction_keys_derive(const uint8_t key[GATE_KEY_SIZE], gate_direction_keys *keys);

/* A key as written in a credential file or a setting: 64 hex digits, either case, and
 * at most one trailing newline ("\n" or "\r\n"). False (and key zeroed) otherwise. */
bool gate_key_parse(const char *text, size_t length, uint8_t key[GATE_KEY_SIZE]);

/* ---- Hex (MQTT payloads, keys) ---- */

/* Writes 2 * count lowercase hex characters, no terminating NUL. */
void gate_hex_encode(const uint8_t *bytes, size_t count, char *hex);

/* Reads exactly 2 * capacity hex characters of either case. False on any other length
 * or character (out is then undefined). */
bool gate_hex_decode(const char *hex, size_t length, uint8_t *out, size_t capacity);

/* An MQTT payload as the protocol writes it: exactly 64 lowercase hex characters, nothing
 * around them. Anything else (upper case, white space, a newline) is not a frame. */
bool gate_frame_from_hex(const char *payload, size_t length, uint8_t frame[GATE_FRAME_SIZE]);

/* ---- Frames ---- */

typedef struct {
    uint8_t version;
    uint8_t type; /* a gate_type */
    uint8_t key_id;
    uint8_t gate;
    uint32_t epoch;
    uint64_t counter;
} gate_header;

/* Encodes the header into bytes 0..15 and signs them into 16..31 with direction_key. */
void gate_frame_write(const gate_header *header, const uint8_t direction_key[GATE_SHA256_SIZE],
                      uint8_t frame[GATE_FRAME_SIZE]);

/* Decodes bytes 0..15; says nothing about the tag. */
void gate_frame_read(const uint8_t frame[GATE_FRAME_SIZE], gate_header *header);

/* True when bytes 16..31 are the tag of bytes 0..15 under direction_key (constant time). */
bool gate_frame_tag_valid(const uint8_t frame[GATE_FRAME_SIZE],
                          const uint8_t direction_key[GATE_SHA256_SIZE]);

/* ---- The client's side (the appliance, gate doctor) ---- */

void gate_client_open(const gate_direction_keys *keys, uint8_t key_id, uint8_t gate, uint32_t epoch,
                      uint64_t counter, uint8_t frame[GATE_FRAME_SIZE]);
void gate_client_status_query(const gate_direction_keys *keys, uint8_t key_id, uint8_t gate,
                              uint32_t epoch, uint64_t counter, uint8_t frame[GATE_FRAME_SIZE]);

/* Whether bytes are a genuine reply to the request (key_id, gate, counter): 32 bytes,
 * version 2, a reply type, those three fields, and a valid tag under keys->d2c. Returns
 * the reply's type and stores its epoch, or returns GATE_TYPE_NONE (epoch untouched) for
 * anything else, which the client ignores. The retained epoch announcement is the reply
 * to (key_id, 0, 0) and has type GATE_TYPE_STATUS. */
gate_type gate_client_check_reply(const gate_direction_keys *keys, uint8_t key_id, uint8_t gate,
                                  uint64_t counter, const uint8_t *bytes, size_t length,
                                  uint32_t *epoch);

/* ---- The ESP32's side: the device state machine ---- */

#ifndef GATE_MAX_KEYS
#define GATE_MAX_KEYS 8 /* provisioned keys (one per client) */
#endif
#ifndef GATE_MAX_RELAYS
#define GATE_MAX_RELAYS 4
#endif
/* Who hears a cycle's release: its requester and the last copies re-acknowledged while
 * it held the relay (a UDP sender, the MQTT status topic). */
#define GATE_MAX_PEERS 4
#define GATE_PEER_ADDRESS_SIZE 28 /* room for a struct sockaddr_in6 (Linux and lwIP) */
#define GATE_RELAY_HOLD_MS 400u
#define GATE_EPOCH_PERIOD_MS 600000u /* 10 minutes */

typedef enum { GATE_VIA_UDP = 1, GATE_VIA_MQTT = 2 } gate_via;

/* Where a request came from, so its replies go back there. The address is the port's
 * own business (its socket address): the core copies it, compares it, never reads it. */
typedef struct {
    uint8_t via; /* a gate_via */
    uint8_t address[GATE_PEER_ADDRESS_SIZE];
} gate_peer;

typedef enum {
    GATE_ACTION_RELAY_ON = 1, /* drive `relay` on; publish plain "1" on the status topic */
    GATE_ACTION_RELAY_OFF,    /* drive `relay` off; publish plain "0" */
    GATE_ACTION_REPLY,        /* send `frame` to `peer`: a datagram, or hex on <status>/v2 */
    GATE_ACTION_REPLY_V1,     /* send the one byte frame[0] to `peer` (v1 over UDP) */
    GATE_ACTION_ANNOUNCE      /* publish `frame` as hex, retained, on <status>/v2/epoch/<key_id> */
} gate_action_kind;

typedef struct {
    uint8_t kind;   /* a gate_action_kind */
    uint8_t relay;  /* RELAY_ON, RELAY_OFF */
    uint8_t key_id; /* ANNOUNCE */
    gate_peer peer; /* REPLY, REPLY_V1 */
    uint8_t frame[GATE_FRAME_SIZE];
} gate_action;

/* Enough for the worst call: every relay released to all its peers, an epoch change
 * announced for every key, then the event's own two (a relay move and a reply, or two
 * replies). */
#define GATE_MAX_ACTIONS (GATE_MAX_RELAYS * (1 + GATE_MAX_PEERS) + GATE_MAX_KEYS + 2)

typedef struct {
    size_t count;
    gate_action items[GATE_MAX_ACTIONS];
} gate_actions;

typedef struct {
    uint8_t key_id;
    gate_direction_keys keys;
    uint64_t last;        /* the last counter acted on since boot; 0: none */
    uint8_t last_answer;  /* GATE_TYPE_RELAY_ON (it cycled) or GATE_TYPE_BUSY */
    uint8_t last_gate;    /* the relay that counter asked for */
} gate_device_key;

typedef struct {
    bool held;
    bool v1;             /* held by a v1 trigger (no key, no counter) */
    uint8_t key_index;   /* v2: index in gate_device.keys of the opening holding it */
    uint64_t counter;    /* v2: its counter */
    uint64_t release_at_ms;
    uint8_t peer_count;
    gate_peer peers[GATE_MAX_PEERS];
} gate_device_relay;

typedef struct {
    /* Configuration: set by gate_device_init and gate_device_add_key, then left alone. */
    uint8_t relay_count;
    bool migration; /* with keys provisioned, still accept v1 requests */
    uint32_t hold_ms;
    uint32_t epoch_period_ms;
    uint8_t key_count;
    gate_device_key keys[GATE_MAX_KEYS];
    /* Since boot. */
    uint32_t epoch;          /* 0 until gate_device_boot succeeds: everything is dropped */
    uint32_t previous_epoch; /* 0: none */
    uint64_t rotate_at_ms;
    gate_device_relay relays[GATE_MAX_RELAYS];
} gate_device;

/* Configures a device with relay_count relays (1..GATE_MAX_RELAYS; others are clamped),
 * the spec's 400 ms hold and 10-minute epoch period, and no key. */
void gate_device_init(gate_device *device, uint8_t relay_count, bool migration);

/* Provisions key K under key_id (1..255). False when key_id is 0 or taken, or the table
 * is full. Before gate_device_boot only. */
bool gate_device_add_key(gate_device *device, uint8_t key_id, const uint8_t key[GATE_KEY_SIZE]);

/* Starts (or restarts) the device: epoch = random, no previous epoch, every last[] 0,
 * relays released. False, and nothing started, when random is 0. */
bool gate_device_boot(gate_device *device, uint64_t now_ms, uint32_t random);

/* True when v1 requests are acted on: no key provisioned, or the migration setting. */
bool gate_device_accepts_v1(const gate_device *device);

/*
 * The events. Each empties `actions`, then first brings the device up to now_ms
 * (releases due relays; draws the next epoch from `random` when a rotation is due), then
 * judges the event. `random` must be fresh from the hardware generator on every call;
 * a value unusable as an epoch (0, or the current or previous one) postpones the
 * rotation to the next call. Nothing happens before gate_device_boot.
 */

/* A UDP datagram from `from` (whose via is set to UDP here): a v2 frame, or v1's 0x01. */
void gate_device_udp(gate_device *device, uint64_t now_ms, uint32_t random, const gate_peer *from,
                     const uint8_t *bytes, size_t length, gate_actions *actions);

/* A message on <trigger_topic>/v2: a frame as 64 lowercase hex characters. */
void gate_device_mqtt(gate_device *device, uint64_t now_ms, uint32_t random, const char *payload,
                      size_t length, gate_actions *actions);

/* A message on <trigger_topic> (v1: any payload). */
void gate_device_mqtt_v1(gate_device *device, uint64_t now_ms, uint32_t random,
                         gate_actions *actions);

/* Time has passed: call at gate_device_next_deadline (earlier calls are harmless). */
void gate_device_tick(gate_device *device, uint64_t now_ms, uint32_t random, gate_actions *actions);

/* The retained epoch announcements (one 0x92 per key, counter 0, gate 0): what an epoch
 * change yields by itself, and what the port publishes again each time MQTT connects. */
void gate_device_announce(const gate_device *device, gate_actions *actions);

/* When the next tick is due (a relay's release or the epoch's rotation); UINT64_MAX
 * before boot. */
uint64_t gate_device_next_deadline(const gate_device *device);

#ifdef __cplusplus
}
#endif

#endif /* GATE_PROTOCOL_H */
