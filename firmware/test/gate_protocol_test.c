/*
 * The C core's tests: every record and scenario of the vectors file
 * (Sources/CGateProtocol/vectors/v2-vectors.txt, its format described at its top), then
 * a few checks of the API that the file cannot express.
 *
 * On the host: gate_protocol_test VECTORS-FILE. Under QEMU (no file system) the file is
 * compiled in: -DGATE_VECTORS_EMBEDDED with v2_vectors.h made by `xxd -i -n v2_vectors`.
 * Ends with "N passed, M failed"; exits 1 when anything failed.
 */
#include "gate_protocol.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GATE_VECTORS_EMBEDDED
#include "v2_vectors.h"
#endif

/* ---- Reporting ---- */

static int passed, failed;       /* tests: records, scenarios, API checks */
static int failures;             /* failed checks, each printed */
static int line_number;
static const char *context = ""; /* the record or scenario being checked */
static int failures_before;      /* failures, when the current test began */

static void fail(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    printf("FAIL vectors:%d %s: ", line_number, context);
    vprintf(format, arguments);
    printf("\n");
    va_end(arguments);
    failures++;
}

static void check(int condition, const char *what) {
    if (!condition) fail("%s", what);
}

/* One record or scenario is one test: it passed when it added no failure. */
static void begin_test(const char *name) {
    context = name;
    failures_before = failures;
}

static void end_test(void) {
    if (failures == failures_before) passed++;
    else failed++;
}

/* ---- Parsing helpers (the test's own, not the core's: a bug there must not hide) ---- */

#define MAX_TOKENS 24
#define MAX_BYTES 256

typedef struct {
    int count;
    char *items[MAX_TOKENS];
} tokens;

static void split(char *line, tokens *t) {
    t->count = 0;
    for (char *p = strtok(line, " "); p != NULL && t->count < MAX_TOKENS; p = strtok(NULL, " ")) {
        t->items[t->count++] = p;
    }
}

/* The value of NAME=VALUE among the tokens from index `from`, or NULL. */
static const char *option(const tokens *t, int from, const char *name) {
    size_t n = strlen(name);
    for (int i = from; i < t->count; i++) {
        if (strncmp(t->items[i], name, n) == 0 && t->items[i][n] == '=') return t->items[i] + n + 1;
    }
    return NULL;
}

static int nibble(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Lowercase hex or '-' into bytes; returns the count, or -1. */
static int parse_hex(const char *text, uint8_t *out, size_t capacity) {
    if (strcmp(text, "-") == 0) return 0;
    size_t length = strlen(text);
    if (length % 2 != 0 || length / 2 > capacity) return -1;
    for (size_t i = 0; i < length / 2; i++) {
        int high = nibble(text[2 * i]), low = nibble(text[2 * i + 1]);
        if (high < 0 || low < 0) return -1;
        out[i] = (uint8_t)(high << 4 | low);
    }
    return (int)(length / 2);
}

static uint64_t parse_decimal(const char *text) {
    return text == NULL ? 0 : strtoull(text, NULL, 10);
}

static uint32_t parse_epoch(const char *text) {
    return text == NULL ? 0 : (uint32_t)strtoul(text, NULL, 16);
}

static int parse_hex_byte(const char *text) {
    return text == NULL ? -1 : (int)strtoul(text, NULL, 16);
}

/* ---- Materials (named keys) ---- */

typedef struct {
    char name[8];
    uint8_t key[GATE_KEY_SIZE];
    gate_direction_keys keys;
} material;

static material materials[8];
static int material_count;

static const material *find_material(const char *name) {
    for (int i = 0; i < material_count; i++) {
        if (name != NULL && strcmp(materials[i].name, name) == 0) return &materials[i];
    }
    return NULL;
}

/* ---- Computed records ---- */

static void check_sha256(const tokens *t) {
    uint8_t message[MAX_BYTES], expected[GATE_SHA256_SIZE], digest[GATE_SHA256_SIZE];
    int length = parse_hex(t->items[1], message, sizeof message);
    if (length < 0 || parse_hex(t->items[2], expected, sizeof expected) != GATE_SHA256_SIZE) {
        fail("malformed record");
        return;
    }
    gate_sha256(message, (size_t)length, digest);
    check(memcmp(digest, expected, sizeof digest) == 0, "one-shot digest differs");
    /* Byte by byte: the same digest whatever the chunking. */
    gate_sha256_context context;
    gate_sha256_init(&context);
    for (int i = 0; i < length; i++) gate_sha256_update(&context, message + i, 1);
    gate_sha256_final(&context, digest);
    check(memcmp(digest, expected, sizeof digest) == 0, "byte-by-byte digest differs");
}

static void check_sha256_repeat(const tokens *t) {
    uint8_t expected[GATE_SHA256_SIZE], digest[GATE_SHA256_SIZE], chunk[997];
    int byte = parse_hex_byte(t->items[1]);
    unsigned long count = strtoul(t->items[2], NULL, 10);
    if (byte < 0 || parse_hex(t->items[3], expected, sizeof expected) != GATE_SHA256_SIZE) {
        fail("malformed record");
        return;
    }
    memset(chunk, byte, sizeof chunk); /* 997: chunks that straddle the 64-byte blocks */
    gate_sha256_context context;
    gate_sha256_init(&context);
    for (unsigned long done = 0; done < count;) {
        unsigned long take = count - done < sizeof chunk ? count - done : sizeof chunk;
        gate_sha256_update(&context, chunk, take);
        done += take;
    }
    gate_sha256_final(&context, digest);
    check(memcmp(digest, expected, sizeof digest) == 0, "digest differs");
}

static void check_hmac(const tokens *t) {
    uint8_t key[MAX_BYTES], message[MAX_BYTES], expected[GATE_SHA256_SIZE], mac[GATE_SHA256_SIZE];
    int key_length = parse_hex(t->items[1], key, sizeof key);
    int message_length = parse_hex(t->items[2], message, sizeof message);
    int mac_length = parse_hex(t->items[3], expected, sizeof expected);
    if (key_length < 0 || message_length < 0 || mac_length < 16) {
        fail("malformed record");
        return;
    }
    gate_hmac_sha256(key, (size_t)key_length, message, (size_t)message_length, mac);
    check(memcmp(mac, expected, (size_t)mac_length) == 0, "MAC differs");
}

static void read_material(const tokens *t) {
    if (material_count == (int)(sizeof materials / sizeof materials[0])) {
        fail("too many materials");
        return;
    }
    material *m = &materials[material_count];
    uint8_t c2d[GATE_SHA256_SIZE], d2c[GATE_SHA256_SIZE];
    if (strlen(t->items[1]) >= sizeof m->name || parse_hex(t->items[2], m->key, GATE_KEY_SIZE) != 32 ||
        parse_hex(t->items[3], c2d, sizeof c2d) != 32 || parse_hex(t->items[4], d2c, sizeof d2c) != 32) {
        fail("malformed record");
        return;
    }
    strcpy(m->name, t->items[1]);
    gate_direction_keys_derive(m->key, &m->keys);
    check(memcmp(m->keys.c2d, c2d, sizeof c2d) == 0, "K_c2d differs");
    check(memcmp(m->keys.d2c, d2c, sizeof d2c) == 0, "K_d2c differs");
    material_count++;
}

static void check_key_text(const tokens *t) {
    uint8_t text[MAX_BYTES], expected[GATE_KEY_SIZE], key[GATE_KEY_SIZE];
    int length = parse_hex(t->items[1], text, sizeof text);
    bool valid = strcmp(t->items[2], "-") != 0;
    if (length < 0 || (valid && parse_hex(t->items[2], expected, sizeof expected) != 32)) {
        fail("malformed record");
        return;
    }
    bool parsed = gate_key_parse((const char *)text, (size_t)length, key);
    check(parsed == valid, valid ? "refused a valid key text" : "accepted an invalid key text");
    if (parsed && valid) check(memcmp(key, expected, sizeof key) == 0, "read a different key");
}

/* A header from NAME=VALUE options: ver (default 2), type, key, gate, epoch, counter. */
static gate_header header_from(const tokens *t, int from, uint8_t type) {
    gate_header header;
    const char *version = option(t, from, "ver");
    header.version = version == NULL ? GATE_VERSION : (uint8_t)parse_decimal(version);
    header.type = option(t, from, "type") ? (uint8_t)parse_hex_byte(option(t, from, "type")) : type;
    header.key_id = (uint8_t)parse_decimal(option(t, from, "key"));
    header.gate = (uint8_t)parse_decimal(option(t, from, "gate"));
    header.epoch = parse_epoch(option(t, from, "epoch"));
    header.counter = parse_decimal(option(t, from, "counter"));
    return header;
}

static bool same_header(const gate_header *a, const gate_header *b) {
    return a->version == b->version && a->type == b->type && a->key_id == b->key_id &&
           a->gate == b->gate && a->epoch == b->epoch && a->counter == b->counter;
}

/* What the client's side makes of a frame record: requests it builds, replies it accepts. */
static void check_frame_as_client(const gate_header *h, const material *m, bool c2d,
                                  const uint8_t expected[GATE_FRAME_SIZE]) {
    uint8_t built[GATE_FRAME_SIZE];
    uint32_t epoch = 0;
    if (c2d && h->type == GATE_TYPE_OPEN) {
        gate_client_open(&m->keys, h->key_id, h->gate, h->epoch, h->counter, built);
        check(memcmp(built, expected, GATE_FRAME_SIZE) == 0, "gate_client_open differs");
    } else if (c2d && h->type == GATE_TYPE_STATUS_QUERY) {
        gate_client_status_query(&m->keys, h->key_id, h->gate, h->epoch, h->counter, built);
        check(memcmp(built, expected, GATE_FRAME_SIZE) == 0, "gate_client_status_query differs");
    }
    gate_type accepted =
        gate_client_check_reply(&m->keys, h->key_id, h->gate, h->counter, expected, GATE_FRAME_SIZE, &epoch);
    if (c2d) {
        check(accepted == GATE_TYPE_NONE, "a request passed for a reply");
    } else {
        check(accepted == h->type && epoch == h->epoch, "the client refused a genuine reply");
    }
}

static void check_frame(const tokens *t) {
    const material *m = find_material(option(t, 2, "material"));
    const char *direction = option(t, 2, "dir");
    uint8_t expected[GATE_FRAME_SIZE], built[GATE_FRAME_SIZE];
    const char *hex = option(t, 2, "hex");
    if (m == NULL || direction == NULL || hex == NULL || parse_hex(hex, expected, sizeof expected) != 32) {
        fail("malformed record");
        return;
    }
    bool c2d = strcmp(direction, "c2d") == 0;
    const uint8_t *signing = c2d ? m->keys.c2d : m->keys.d2c, *other = c2d ? m->keys.d2c : m->keys.c2d;
    gate_header header = header_from(t, 2, 0), read;
    gate_frame_write(&header, signing, built);
    check(memcmp(built, expected, sizeof built) == 0, "gate_frame_write differs");
    gate_frame_read(expected, &read);
    check(same_header(&read, &header), "gate_frame_read differs");
    check(gate_frame_tag_valid(expected, signing), "tag refused with its own direction key");
    check(!gate_frame_tag_valid(expected, other), "tag accepted with the other direction key");
    char text[GATE_FRAME_HEX_SIZE];
    gate_hex_encode(expected, sizeof expected, text);
    check(memcmp(text, hex, sizeof text) == 0, "gate_hex_encode differs");
    check(gate_frame_from_hex(hex, strlen(hex), built) && memcmp(built, expected, 32) == 0,
          "gate_frame_from_hex differs");
    check_frame_as_client(&header, m, c2d, expected);
}

/* ---- Scenarios ---- */

typedef struct {
    char name[64];
    gate_device device;
    const material *materials[256]; /* by key_id: what the scenario provisioned */
    gate_actions actions;           /* the last step's */
    size_t matched;                 /* how many of them expect lines have matched */
    bool boot_refused;              /* the last step was a refused boot */
} scenario;

static scenario current; /* static: a device and its actions are a few kilobytes */

static gate_peer peer_named(const char *name) {
    gate_peer peer;
    memset(&peer, 0, sizeof peer);
    peer.via = GATE_VIA_UDP;
    size_t length = strlen(name);
    memcpy(peer.address, name, length < GATE_PEER_ADDRESS_SIZE ? length : GATE_PEER_ADDRESS_SIZE - 1);
    return peer;
}

/* The tag of FRAME's t->items[kind..] under the key its sign= option names. */
static bool signing_key(const tokens *t, int from, uint8_t key_id, const uint8_t **key) {
    const char *sign = option(t, from, "sign");
    const material *own = current.materials[key_id];
    if (sign == NULL || strcmp(sign, "c2d") == 0 || strcmp(sign, "d2c") == 0) {
        if (own == NULL) return false;
        *key = (sign != NULL && strcmp(sign, "d2c") == 0) ? own->keys.d2c : own->keys.c2d;
    } else if (strncmp(sign, "c2d:", 4) == 0 && find_material(sign + 4) != NULL) {
        *key = find_material(sign + 4)->keys.c2d;
    } else if (strcmp(sign, "zero") == 0) {
        *key = NULL;
    } else {
        return false;
    }
    return true;
}

/* Builds the FRAME whose kind (open, query, frame) is t->items[kind]; then, for MQTT,
 * its hex. Applies flip, truncate, append and case. Returns the length, or -1. */
static int build_request(const tokens *t, int kind, bool mqtt, uint8_t *out, size_t capacity) {
    const char *name = t->items[kind];
    uint8_t type = strcmp(name, "open") == 0 ? GATE_TYPE_OPEN
                   : strcmp(name, "query") == 0 ? GATE_TYPE_STATUS_QUERY : 0;
    gate_header header = header_from(t, kind + 1, type);
    const uint8_t *key;
    uint8_t frame[GATE_FRAME_SIZE];
    if (!signing_key(t, kind + 1, header.key_id, &key)) return -1;
    gate_frame_write(&header, key != NULL ? key : materials[0].keys.c2d, frame);
    if (key == NULL) memset(frame + GATE_SIGNED_SIZE, 0, GATE_TAG_SIZE);
    if (option(t, kind + 1, "flip") != NULL) frame[parse_decimal(option(t, kind + 1, "flip")) % 32] ^= 1;
    size_t length = GATE_FRAME_SIZE;
    if (mqtt) {
        gate_hex_encode(frame, sizeof frame, (char *)out);
        length = GATE_FRAME_HEX_SIZE;
        const char *letter_case = option(t, kind + 1, "case");
        for (size_t i = 0; letter_case != NULL && i < length; i++) {
            if (out[i] >= 'a' && out[i] <= 'f') out[i] = (uint8_t)(out[i] - 'a' + 'A');
        }
    } else {
        memcpy(out, frame, sizeof frame);
    }
    if (option(t, kind + 1, "truncate") != NULL) length = parse_decimal(option(t, kind + 1, "truncate"));
    const char *append = option(t, kind + 1, "append");
    if (append != NULL) {
        int extra = parse_hex(append, out + length, capacity - length);
        if (extra < 0) return -1;
        length += (size_t)extra;
    }
    return (int)length;
}

/* The bytes of a udp=/mqtt event from index `kind` on: raw=HEX or a FRAME. */
static int event_bytes(const tokens *t, int kind, bool mqtt, uint8_t *out, size_t capacity) {
    if (kind >= t->count) return -1;
    if (strncmp(t->items[kind], "raw=", 4) == 0) return parse_hex(t->items[kind] + 4, out, capacity);
    return build_request(t, kind, mqtt, out, capacity);
}

/* An action in the words of an expect line, so that the two compare as text. A frame
 * that is not what a correct device sends (wrong version, a tag invalid under the d2c of
 * the key the scenario provisioned) says so at the end. */
static void describe(const gate_action *action, char *text, size_t size) {
    gate_header h;
    gate_frame_read(action->frame, &h);
    char peer[GATE_PEER_ADDRESS_SIZE + 8] = "mqtt";
    if (action->peer.via == GATE_VIA_UDP) snprintf(peer, sizeof peer, "udp=%.27s", (const char *)action->peer.address);
    const material *m = current.materials[h.key_id];
    bool genuine = h.version == GATE_VERSION && m != NULL && gate_frame_tag_valid(action->frame, m->keys.d2c);
    const char *fields = "type=%02x key=%u gate=%u epoch=%08lx counter=%llu%s";
    char frame[128];
    snprintf(frame, sizeof frame, fields, h.type, h.key_id, h.gate, (unsigned long)h.epoch,
             (unsigned long long)h.counter, genuine ? "" : " not-genuine");
    switch ((gate_action_kind)action->kind) {
    case GATE_ACTION_RELAY_ON: snprintf(text, size, "relay-on %u", action->relay); break;
    case GATE_ACTION_RELAY_OFF: snprintf(text, size, "relay-off %u", action->relay); break;
    case GATE_ACTION_REPLY: snprintf(text, size, "reply %s %s", peer, frame); break;
    case GATE_ACTION_REPLY_V1: snprintf(text, size, "reply-v1 %s byte=%02x", peer, action->frame[0]); break;
    case GATE_ACTION_ANNOUNCE:
        snprintf(text, size, "announce %s%s", frame, action->key_id == h.key_id ? "" : " wrong-topic");
        break;
    default: snprintf(text, size, "unknown action kind %u", action->kind); break;
    }
}

/* Every action of the last step must have been expected. */
static void close_step(void) {
    char text[256];
    for (; current.matched < current.actions.count; current.matched++) {
        describe(&current.actions.items[current.matched], text, sizeof text);
        fail("unexpected action: %s", text);
    }
    if (current.boot_refused) fail("unexpected: boot refused");
    current.boot_refused = false;
}

static void run_event(const tokens *t, int e, uint64_t at, uint32_t rnd) {
    gate_device *d = &current.device;
    uint8_t bytes[MAX_BYTES];
    const char *event = t->items[e];
    if (strcmp(event, "boot") == 0) {
        current.boot_refused = !gate_device_boot(d, at, rnd);
    } else if (strcmp(event, "tick") == 0) {
        gate_device_tick(d, at, rnd, &current.actions);
    } else if (strcmp(event, "announce") == 0) {
        gate_device_announce(d, &current.actions);
    } else if (strcmp(event, "mqtt-v1") == 0) {
        gate_device_mqtt_v1(d, at, rnd, &current.actions);
    } else if (strncmp(event, "udp=", 4) == 0) {
        int length = event_bytes(t, e + 1, false, bytes, sizeof bytes);
        gate_peer from = peer_named(event + 4);
        if (length < 0) fail("malformed event");
        else gate_device_udp(d, at, rnd, &from, bytes, (size_t)length, &current.actions);
    } else if (strcmp(event, "mqtt") == 0) {
        int length = event_bytes(t, e + 1, true, bytes, sizeof bytes);
        if (length < 0) fail("malformed event");
        else gate_device_mqtt(d, at, rnd, (const char *)bytes, (size_t)length, &current.actions);
    } else {
        fail("unknown event '%s'", event);
    }
}

static void run_step(const tokens *t) {
    close_step();
    current.actions.count = 0;
    current.matched = 0;
    int e = 1;
    while (e < t->count && (strncmp(t->items[e], "at=", 3) == 0 || strncmp(t->items[e], "rnd=", 4) == 0)) e++;
    if (e == t->count) {
        fail("a step without an event");
        return;
    }
    run_event(t, e, parse_decimal(option(t, 1, "at")), parse_epoch(option(t, 1, "rnd")));
}

static void expect_action(const tokens *t) {
    char expected[256] = "", got[256];
    for (int i = 1; i < t->count; i++) {
        strncat(expected, t->items[i], sizeof expected - strlen(expected) - 2);
        if (i + 1 < t->count) strcat(expected, " ");
    }
    if (strcmp(expected, "boot-refused") == 0) {
        check(current.boot_refused, "expected: boot refused");
        current.boot_refused = false;
    } else if (current.matched >= current.actions.count) {
        fail("expected '%s', got no further action", expected);
    } else {
        describe(&current.actions.items[current.matched++], got, sizeof got);
        if (strcmp(expected, got) != 0) fail("expected '%s', got '%s'", expected, got);
    }
}

static void check_deadline(const tokens *t) {
    uint64_t expected = strcmp(t->items[1], "none") == 0 ? UINT64_MAX : parse_decimal(t->items[1]);
    uint64_t deadline = gate_device_next_deadline(&current.device);
    if (deadline != expected) fail("deadline %llu, expected %s", (unsigned long long)deadline, t->items[1]);
}

static void scenario_line(const tokens *t) {
    const char *kind = t->items[0];
    if (strcmp(kind, "device") == 0) {
        gate_device_init(&current.device, (uint8_t)parse_decimal(option(t, 1, "relays")),
                         parse_decimal(option(t, 1, "migration")) != 0);
        if (option(t, 1, "hold") != NULL) current.device.hold_ms = (uint32_t)parse_decimal(option(t, 1, "hold"));
        if (option(t, 1, "period") != NULL) current.device.epoch_period_ms = (uint32_t)parse_decimal(option(t, 1, "period"));
    } else if (strcmp(kind, "key") == 0 && t->count == 3) {
        uint8_t id = (uint8_t)parse_decimal(t->items[1]);
        current.materials[id] = find_material(t->items[2]);
        check(current.materials[id] != NULL && gate_device_add_key(&current.device, id, current.materials[id]->key),
              "key not provisioned");
    } else if (strcmp(kind, "step") == 0) {
        run_step(t);
    } else if (strcmp(kind, "expect") == 0 && t->count > 1) {
        expect_action(t);
    } else if (strcmp(kind, "deadline") == 0 && t->count == 2) {
        check_deadline(t);
    } else {
        fail("unknown line '%s'", kind);
    }
}

/* ---- The file ---- */

static bool in_scenario;
static char scenario_name[64];

static void record(tokens *t) {
    const char *kind = t->items[0];
    if (in_scenario) {
        if (strcmp(kind, "end") == 0) {
            close_step();
            end_test();
            in_scenario = false;
        } else {
            scenario_line(t);
        }
        return;
    }
    if (strcmp(kind, "scenario") == 0 && t->count == 2) {
        memset(&current, 0, sizeof current);
        snprintf(scenario_name, sizeof scenario_name, "scenario %s", t->items[1]);
        begin_test(scenario_name);
        in_scenario = true;
        return;
    }
    begin_test(kind);
    if (strcmp(kind, "sha256") == 0 && t->count == 3) check_sha256(t);
    else if (strcmp(kind, "sha256-repeat") == 0 && t->count == 4) check_sha256_repeat(t);
    else if (strcmp(kind, "hmac") == 0 && t->count == 4) check_hmac(t);
    else if (strcmp(kind, "material") == 0 && t->count == 5) read_material(t);
    else if (strcmp(kind, "key-text") == 0 && t->count == 3) check_key_text(t);
    else if (strcmp(kind, "frame") == 0 && t->count >= 3) check_frame(t);
    else fail("unknown record");
    end_test();
}

static void run_vectors(const char *text, size_t length) {
    static char line[2048];
    size_t start = 0;
    line_number = 0;
    while (start < length) {
        size_t end = start;
        while (end < length && text[end] != '\n') end++;
        line_number++;
        size_t n = end - start;
        if (n >= sizeof line) {
            begin_test("line");
            fail("line too long");
        } else if (n > 0 && text[start] != '#') {
            memcpy(line, text + start, n);
            line[n] = '\0';
            tokens t;
            split(line, &t);
            if (t.count > 0) record(&t);
        }
        start = end + 1;
    }
    begin_test("end of file");
    check(!in_scenario, "a scenario without end");
    check(material_count > 0 && passed > 50, "the file held too few records");
    end_test();
}

/* ---- What the file cannot say ---- */

static void test_client_matches_only_its_request(void) {
    begin_test("client matches a reply on key_id, gate and counter");
    const material *a = find_material("A");
    uint8_t reply[GATE_FRAME_SIZE];
    uint32_t epoch = 7;
    gate_header h = {GATE_VERSION, GATE_TYPE_RELAY_ON, 1, 0, 0x0badcafe, 5};
    gate_frame_write(&h, a->keys.d2c, reply);
    check(gate_client_check_reply(&a->keys, 1, 0, 5, reply, 32, &epoch) == GATE_TYPE_RELAY_ON, "refused");
    check(epoch == 0x0badcafe, "epoch not given");
    epoch = 7;
    check(gate_client_check_reply(&a->keys, 1, 0, 6, reply, 32, &epoch) == GATE_TYPE_NONE, "other counter");
    check(gate_client_check_reply(&a->keys, 2, 0, 5, reply, 32, &epoch) == GATE_TYPE_NONE, "other key_id");
    check(gate_client_check_reply(&a->keys, 1, 1, 5, reply, 32, &epoch) == GATE_TYPE_NONE, "other gate");
    check(gate_client_check_reply(&a->keys, 1, 0, 5, reply, 31, &epoch) == GATE_TYPE_NONE, "31 bytes");
    check(epoch == 7, "epoch written for a refused reply");
    h.type = GATE_TYPE_OPEN; /* a request type signed with d2c is no reply either */
    gate_frame_write(&h, a->keys.d2c, reply);
    check(gate_client_check_reply(&a->keys, 1, 0, 5, reply, 32, &epoch) == GATE_TYPE_NONE, "request type");
    h.type = GATE_TYPE_RELAY_ON; /* a reply type signed with c2d: a reflected request */
    gate_frame_write(&h, a->keys.c2d, reply);
    check(gate_client_check_reply(&a->keys, 1, 0, 5, reply, 32, &epoch) == GATE_TYPE_NONE, "c2d-signed");
    h.version = 1;
    gate_frame_write(&h, a->keys.d2c, reply);
    check(gate_client_check_reply(&a->keys, 1, 0, 5, reply, 32, &epoch) == GATE_TYPE_NONE, "version 1");
    end_test();
}

static void test_hex(void) {
    begin_test("hex");
    uint8_t bytes[3];
    char text[6];
    check(gate_hex_decode("0aFf10", 6, bytes, 3) && bytes[0] == 0x0a && bytes[1] == 0xff, "mixed case");
    gate_hex_encode(bytes, 3, text);
    check(memcmp(text, "0aff10", 6) == 0, "encode is lowercase");
    check(!gate_hex_decode("0aff1", 5, bytes, 3), "odd length");
    check(!gate_hex_decode("0aff10", 6, bytes, 2), "longer than the capacity");
    check(!gate_hex_decode("0aff1g", 6, bytes, 3), "a non-hex digit");
    check(!gate_hex_decode("0a ff1", 6, bytes, 3), "a space");
    check(gate_equal_in_constant_time(bytes, bytes, 3), "equal bytes");
    check(!gate_equal_in_constant_time((const uint8_t *)"abc", (const uint8_t *)"abd", 3), "different bytes");
    end_test();
}

static void test_key_table(void) {
    begin_test("key table and relay count");
    static gate_device d;
    uint8_t key[GATE_KEY_SIZE] = {1};
    gate_device_init(&d, 0, false);
    check(d.relay_count == 1, "0 relays is 1");
    gate_device_init(&d, 200, false);
    check(d.relay_count == GATE_MAX_RELAYS, "relays clamped");
    check(!gate_device_add_key(&d, 0, key), "key_id 0 accepted");
    check(gate_device_add_key(&d, 1, key), "key_id 1 refused");
    check(!gate_device_add_key(&d, 1, key), "key_id 1 twice");
    for (int id = 2; id <= GATE_MAX_KEYS; id++) check(gate_device_add_key(&d, (uint8_t)id, key), "refused");
    check(!gate_device_add_key(&d, 255, key), "more keys than the table holds");
    check(!gate_device_accepts_v1(&d), "v1 accepted with keys");
    end_test();
}

/* The busiest call: every relay released to a full list of peers, a rotation announced
 * for every key, then an open: nothing may be cut off. */
static void test_busiest_call_fits(void) {
    begin_test("the busiest call fits in gate_actions");
    static gate_device d;
    static gate_actions actions;
    gate_direction_keys keys;
    uint8_t key[GATE_KEY_SIZE] = {9}, frame[GATE_FRAME_SIZE];
    gate_device_init(&d, GATE_MAX_RELAYS, false);
    for (int id = 1; id <= GATE_MAX_KEYS; id++) gate_device_add_key(&d, (uint8_t)id, key);
    gate_direction_keys_derive(key, &keys);
    gate_device_boot(&d, 0, 0x0badcafe);
    uint64_t counter = 1;
    for (uint8_t relay = 0; relay < GATE_MAX_RELAYS; relay++) {
        gate_client_open(&keys, 1, relay, 0x0badcafe, counter, frame);
        for (int p = 0; p < GATE_MAX_PEERS; p++) {
            gate_peer from = peer_named(p == 0 ? "a" : p == 1 ? "b" : p == 2 ? "c" : "d");
            gate_device_udp(&d, 599000, 0, &from, frame, sizeof frame, &actions);
        }
        counter++;
    }
    gate_peer from = peer_named("e");
    gate_client_open(&keys, 2, 0, 0x0badcafe, 1, frame);
    gate_device_udp(&d, 600000, 0x1111aaaa, &from, frame, sizeof frame, &actions);
    size_t expected = GATE_MAX_RELAYS * (1 + GATE_MAX_PEERS) + GATE_MAX_KEYS + 2;
    check(actions.count == expected, "actions were cut off or invented");
    check(actions.count <= GATE_MAX_ACTIONS, "more actions than the bound");
    end_test();
}

/* ---- Main ---- */

static int finish(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && failures == 0 ? 0 : 1;
}

static void run_all(const char *text, size_t length) {
    run_vectors(text, length);
    if (find_material("A") == NULL) {
        begin_test("material A");
        fail("the API tests need material A");
        end_test();
        return;
    }
    test_client_matches_only_its_request();
    test_hex();
    test_key_table();
    test_busiest_call_fits();
}

#ifdef GATE_VECTORS_EMBEDDED
int main(void) {
    run_all((const char *)v2_vectors, v2_vectors_len);
    return finish();
}
#else
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s VECTORS-FILE\n", argv[0]);
        return 2;
    }
    FILE *file = fopen(argv[1], "rb");
    static char text[1 << 20];
    size_t length = file == NULL ? 0 : fread(text, 1, sizeof text, file);
    if (file == NULL || ferror(file) || length == sizeof text) {
        fprintf(stderr, "%s: cannot read the vectors file %s\n", argv[0], argv[1]);
        return 2;
    }
    fclose(file);
    run_all(text, length);
    return finish();
}
#endif
