/*
 * libFuzzer on protocol v2's C core (Sources/CGateProtocol): the frame check and the
 * ESP32's rules. The input is a device configuration and a sequence of events (datagrams
 * and MQTT payloads, raw or built as genuine frames so that the fuzzer gets past the tag,
 * then flipped; v1 triggers, ticks, reboots) with times and random numbers.
 *
 * Oracles beyond "no crash" (ASan, UBSan):
 * - a frame passes the tag check exactly when no byte of it was flipped;
 * - the relay GPIO alternates: on only when off, off only when on;
 * - one (key_id, counter) cycles the relay at most once per boot (never twice);
 * - a 0x91 is never said while its own cycle still holds the relay;
 * - every reply is a genuine v2 frame: version 2, a reply type, a valid d2c tag, the
 *   current epoch, never 0; every announcement a 0x92 with counter 0;
 * - no call yields more actions than its configuration's bound (GATE_MAX_ACTIONS).
 */
#include "gate_protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *data;
    size_t size;
} input;

static uint8_t take(input *in) {
    if (in->size == 0) return 0;
    in->size--;
    return *in->data++;
}

static uint32_t take32(input *in) {
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) value = value << 8 | take(in);
    return value;
}

#define KEYS 3
static const uint8_t key_material[KEYS][GATE_KEY_SIZE] = {{1}, {2}, {3}};
static gate_direction_keys direction[KEYS];
static gate_device device;
static gate_actions actions;
static bool relay_on[GATE_MAX_RELAYS];
static uint64_t holder[GATE_MAX_RELAYS]; /* (key_id << 56 | counter) of the v2 cycle holding it */
static uint64_t cycled[256]; /* (key_id << 56 | counter) of each v2 cycle since boot */
static size_t cycled_count;

/* An oracle that failed names its line, then aborts: libFuzzer saves the input. */
#define require(condition) require_at((condition), #condition, __LINE__)
static void require_at(bool condition, const char *text, int line) {
    if (condition) return;
    fprintf(stderr, "gate-protocol.c:%d: oracle failed: %s\n", line, text);
    abort();
}

/* A frame built from the input's fields, genuine unless the input flips some of it. */
static void build_frame(input *in, uint8_t frame[GATE_FRAME_SIZE]) {
    uint8_t selector = take(in);
    uint8_t key = (uint8_t)(selector % (KEYS + 1)); /* KEYS: an unprovisioned key_id */
    gate_header header;
    header.version = (selector & 0x80) ? take(in) : GATE_VERSION;
    header.type = (selector & 0x40) ? take(in) : ((selector & 0x20) ? GATE_TYPE_STATUS_QUERY : GATE_TYPE_OPEN);
    header.key_id = (uint8_t)(key + 1);
    header.gate = take(in) % (GATE_MAX_RELAYS + 1);
    uint8_t epoch_choice = take(in) % 4;
    header.epoch = epoch_choice == 0 ? device.epoch : epoch_choice == 1 ? device.previous_epoch : take32(in);
    header.counter = take(in) % 8;
    const uint8_t *signing = direction[key % KEYS].c2d;
    if (selector & 0x10) signing = direction[key % KEYS].d2c; /* a reflected reply key */
    gate_frame_write(&header, signing, frame);
    uint8_t flips = take(in) % 4;
    uint8_t original[GATE_FRAME_SIZE];
    memcpy(original, frame, sizeof original);
    for (uint8_t i = 0; i < flips; i++) frame[take(in) % GATE_FRAME_SIZE] ^= (uint8_t)(take(in) | 1);
    bool changed = memcmp(original, frame, sizeof original) != 0;
    require(gate_frame_tag_valid(frame, signing) == !changed);
}

/* Whether an announcement follows action i: then an epoch change came after it. */
static bool announced_after(size_t i) {
    for (size_t j = i + 1; j < actions.count; j++) {
        if (actions.items[j].kind == GATE_ACTION_ANNOUNCE) return true;
    }
    return false;
}

/* After each call: the oracles that do not depend on what the event was. Replies carry
 * the epoch current when they were made: the one before the call for a release that
 * came before the call's rotation, the one after for everything else. */
static void check_actions(uint32_t epoch_before) {
    size_t bound = (size_t)device.relay_count * (1 + GATE_MAX_PEERS) + device.key_count + 2;
    require(actions.count <= bound && actions.count <= GATE_MAX_ACTIONS);
    for (size_t i = 0; i < actions.count; i++) {
        const gate_action *a = &actions.items[i];
        gate_header h;
        gate_frame_read(a->frame, &h);
        switch ((gate_action_kind)a->kind) {
        case GATE_ACTION_RELAY_ON:
            require(a->relay < device.relay_count && !relay_on[a->relay]);
            relay_on[a->relay] = true;
            holder[a->relay] = 0; /* v1, unless a 0x90 follows */
            /* A v2 cycle's 0x90 follows its relay-on: that (key, counter) must be new. */
            if (i + 1 < actions.count && actions.items[i + 1].kind == GATE_ACTION_REPLY) {
                gate_header reply;
                gate_frame_read(actions.items[i + 1].frame, &reply);
                uint64_t id = (uint64_t)reply.key_id << 56 | reply.counter;
                for (size_t j = 0; j < cycled_count; j++) require(cycled[j] != id);
                if (cycled_count < 256) cycled[cycled_count++] = id;
                holder[a->relay] = id;
            }
            break;
        case GATE_ACTION_RELAY_OFF:
            require(a->relay < device.relay_count && relay_on[a->relay]);
            relay_on[a->relay] = false;
            break;
        case GATE_ACTION_REPLY:
        case GATE_ACTION_ANNOUNCE:
            require(h.version == GATE_VERSION && h.key_id >= 1 && h.key_id <= KEYS);
            require(gate_frame_tag_valid(a->frame, direction[h.key_id - 1].d2c));
            bool before_rotation = a->kind == GATE_ACTION_REPLY && announced_after(i);
            require(h.epoch == (before_rotation ? epoch_before : device.epoch) && h.epoch != 0);
            require(h.type >= GATE_TYPE_RELAY_ON && h.type <= GATE_TYPE_STALE_EPOCH);
            if (a->kind == GATE_ACTION_ANNOUNCE) require(h.type == GATE_TYPE_STATUS && h.counter == 0);
            if (h.type == GATE_TYPE_RELAY_OFF && h.gate < GATE_MAX_RELAYS) {
                require(!(relay_on[h.gate] && holder[h.gate] == ((uint64_t)h.key_id << 56 | h.counter)));
            }
            break;
        case GATE_ACTION_REPLY_V1:
            require(a->frame[0] <= 1 && gate_device_accepts_v1(&device));
            break;
        default:
            abort();
        }
    }
}

static void boot(uint64_t now, uint32_t random) {
    if (gate_device_boot(&device, now, random)) {
        memset(relay_on, 0, sizeof relay_on); /* the port drives every relay low at boot */
        cycled_count = 0;
    }
}

static void event(input *in, uint64_t now, uint32_t random) {
    uint8_t op = take(in), bytes[80];
    uint32_t epoch_before = device.epoch;
    char hex[GATE_FRAME_HEX_SIZE + 8];
    gate_peer from = {GATE_VIA_UDP, {take(in) % 4}};
    size_t length;
    switch (op % 7) {
    case 0: /* a datagram of any bytes */
        length = take(in) % sizeof bytes;
        for (size_t i = 0; i < length; i++) bytes[i] = take(in);
        gate_device_udp(&device, now, random, &from, bytes, length, &actions);
        break;
    case 1: /* a built frame over UDP */
        build_frame(in, bytes);
        gate_device_udp(&device, now, random, &from, bytes, GATE_FRAME_SIZE, &actions);
        break;
    case 2: /* a built frame over MQTT, as hex, maybe cut short */
        build_frame(in, bytes);
        gate_hex_encode(bytes, GATE_FRAME_SIZE, hex);
        gate_device_mqtt(&device, now, random, hex, GATE_FRAME_HEX_SIZE - (take(in) % 4 == 0), &actions);
        break;
    case 3: /* an MQTT payload of any bytes */
        length = take(in) % sizeof hex;
        for (size_t i = 0; i < length; i++) hex[i] = (char)take(in);
        gate_device_mqtt(&device, now, random, hex, length, &actions);
        break;
    case 4: gate_device_mqtt_v1(&device, now, random, &actions); break;
    case 5: gate_device_tick(&device, now, random, &actions); break;
    default: boot(now, random); actions.count = 0; break;
    }
    check_actions(epoch_before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    input in = {data, size};
    static bool derived;
    if (!derived) {
        for (int k = 0; k < KEYS; k++) gate_direction_keys_derive(key_material[k], &direction[k]);
        derived = true;
    }
    uint8_t config = take(&in);
    gate_device_init(&device, (uint8_t)(1 + (config & 3)), (config & 4) != 0);
    if (config & 8) device.hold_ms = take(&in) * 10u;
    for (uint8_t k = 0; k < (config >> 4) % (KEYS + 1); k++) gate_device_add_key(&device, (uint8_t)(k + 1), key_material[k]);
    uint64_t now = take(&in);
    boot(now, take32(&in) | 1);
    while (in.size > 0) {
        uint8_t step = take(&in); /* small steps mostly; some jump whole epoch periods */
        now += step < 200 ? step * 5u : (uint64_t)(step - 199) * 300000u;
        event(&in, now, take32(&in));
    }
    return 0;
}
