/* The ESP32's rules of protocol v2 (PROTOCOL-V2.md, "The ESP32's rules") as a state
 * machine: events in, actions out. The port only moves bytes and drives the GPIO. */
#include "gate_protocol.h"

#include <string.h>

static const gate_peer mqtt_peer = {GATE_VIA_MQTT, {0}};

/* ---- Actions ---- */

/* GATE_MAX_ACTIONS bounds every call (see the header), so the list never fills; the
 * check only keeps a wrong bound from writing past the array. */
static gate_action *append(gate_actions *actions, gate_action_kind kind) {
    if (actions->count >= GATE_MAX_ACTIONS) return NULL;
    gate_action *action = &actions->items[actions->count++];
    memset(action, 0, sizeof *action);
    action->kind = (uint8_t)kind;
    return action;
}

static void move_relay(gate_actions *actions, gate_action_kind kind, uint8_t relay) {
    gate_action *action = append(actions, kind);
    if (action != NULL) action->relay = relay;
}

/* Every reply carries the current epoch and is signed with the key's d2c. */
static void reply(const gate_device *device, gate_actions *actions, const gate_device_key *key,
                  gate_type type, uint8_t gate, uint64_t counter, const gate_peer *to) {
    gate_action *action = append(actions, GATE_ACTION_REPLY);
    if (action == NULL) return;
    action->peer = *to;
    gate_header header = {GATE_VERSION, (uint8_t)type, key->key_id, gate, device->epoch, counter};
    gate_frame_write(&header, key->keys.d2c, action->frame);
}

/* v1 answers only UDP senders: MQTT's v1 answer is the plain 1/0 of every relay move. */
static void reply_v1(gate_actions *actions, const gate_peer *to, uint8_t byte) {
    if (to->via != GATE_VIA_UDP) return;
    gate_action *action = append(actions, GATE_ACTION_REPLY_V1);
    if (action == NULL) return;
    action->peer = *to;
    action->frame[0] = byte;
}

static void append_announcements(const gate_device *device, gate_actions *actions) {
    for (uint8_t i = 0; i < device->key_count; i++) {
        const gate_device_key *key = &device->keys[i];
        gate_action *action = append(actions, GATE_ACTION_ANNOUNCE);
        if (action == NULL) return;
        action->key_id = key->key_id;
        gate_header header = {GATE_VERSION, GATE_TYPE_STATUS, key->key_id, 0, device->epoch, 0};
        gate_frame_write(&header, key->keys.d2c, action->frame);
    }
}

/* ---- Relays ---- */

/* The requester is kept in slot 0; when the list is full, the newest copy takes the last
 * slot: it is the likeliest to be a client's fallback still waiting for the release. */
static void add_peer(gate_device_relay *relay, const gate_peer *peer) {
    for (uint8_t i = 0; i < relay->peer_count; i++) {
        if (memcmp(&relay->peers[i], peer, sizeof *peer) == 0) return;
    }
    if (relay->peer_count < GATE_MAX_PEERS) relay->peer_count++;
    relay->peers[relay->peer_count - 1] = *peer;
}

static gate_device_relay *hold(gate_device *device, uint8_t index, uint64_t now_ms,
                               gate_actions *actions) {
    gate_device_relay *relay = &device->relays[index];
    memset(relay, 0, sizeof *relay);
    relay->held = true;
    relay->release_at_ms = now_ms + device->hold_ms;
    move_relay(actions, GATE_ACTION_RELAY_ON, index);
    return relay;
}

/* The relay moves first, then the replies: 0x91 is said only once it is true. */
static void release(gate_device *device, uint8_t index, gate_actions *actions) {
    gate_device_relay *relay = &device->relays[index];
    relay->held = false;
    move_relay(actions, GATE_ACTION_RELAY_OFF, index);
    for (uint8_t i = 0; i < relay->peer_count; i++) {
        if (relay->v1) {
            reply_v1(actions, &relay->peers[i], 0x00);
        } else {
            reply(device, actions, &device->keys[relay->key_index], GATE_TYPE_RELAY_OFF, index,
                  relay->counter, &relay->peers[i]);
        }
    }
    relay->peer_count = 0;
}

/* ---- Epochs ---- */

static bool epoch_usable(const gate_device *device, uint32_t candidate) {
    return candidate != 0 && candidate != device->epoch && candidate != device->previous_epoch;
}

static bool epoch_valid(const gate_device *device, uint32_t epoch) {
    return epoch != 0 && (epoch == device->epoch || epoch == device->previous_epoch);
}

/* A rotation more than a period late (a port that stalled) lets the previous epoch go
 * too: it has then been valid longer than the one period the spec gives it. */
static void rotate(gate_device *device, uint64_t now_ms, uint32_t random, gate_actions *actions) {
    bool late = now_ms - device->rotate_at_ms >= device->epoch_period_ms;
    device->previous_epoch = late ? 0 : device->epoch;
    device->epoch = random;
    device->rotate_at_ms = now_ms + device->epoch_period_ms;
    append_announcements(device, actions);
}

/* Brings the device up to now_ms before an event is judged, so that a frame arriving
 * just after a release or a rotation is judged by the state it arrived in. */
static void advance(gate_device *device, uint64_t now_ms, uint32_t random, gate_actions *actions) {
    for (uint8_t i = 0; i < device->relay_count; i++) {
        if (device->relays[i].held && now_ms >= device->relays[i].release_at_ms) {
            release(device, i, actions);
        }
    }
    if (now_ms >= device->rotate_at_ms && epoch_usable(device, random)) {
        rotate(device, now_ms, random, actions);
    }
}

/* ---- Requests ---- */

static gate_device_key *find_key(gate_device *device, uint8_t key_id) {
    for (uint8_t i = 0; i < device->key_count; i++) {
        if (device->keys[i].key_id == key_id) return &device->keys[i];
    }
    return NULL;
}

/* Rule 2: the same counter again gets that counter's answer, and nothing moves. */
static void repeat_answer(gate_device *device, gate_device_key *key, const gate_peer *from,
                          gate_actions *actions) {
    if (key->last_answer == GATE_TYPE_BUSY) {
        reply(device, actions, key, GATE_TYPE_BUSY, key->last_gate, key->last, from);
        return;
    }
    gate_device_relay *relay = &device->relays[key->last_gate];
    bool still_held = relay->held && !relay->v1 && &device->keys[relay->key_index] == key &&
                      relay->counter == key->last;
    reply(device, actions, key, GATE_TYPE_RELAY_ON, key->last_gate, key->last, from);
    if (still_held) {
        add_peer(relay, from); /* its 0x91 comes with the release */
    } else {
        reply(device, actions, key, GATE_TYPE_RELAY_OFF, key->last_gate, key->last, from);
    }
}

/* Rules 2 to 6 for a well-formed, genuine open. */
static void judge_open(gate_device *device, uint64_t now_ms, gate_device_key *key,
                       const gate_header *header, const gate_peer *from, gate_actions *actions) {
    if (header->counter == key->last) {
        repeat_answer(device, key, from, actions);
        return;
    }
    if (header->counter < key->last) return;
    if (!epoch_valid(device, header->epoch)) {
        reply(device, actions, key, GATE_TYPE_STALE_EPOCH, header->gate, header->counter, from);
        return;
    }
    /* last[] moves before the relay: a copy of this frame can never cycle it again. */
    key->last = header->counter;
    key->last_gate = header->gate;
    if (device->relays[header->gate].held) {
        key->last_answer = GATE_TYPE_BUSY;
        reply(device, actions, key, GATE_TYPE_BUSY, header->gate, header->counter, from);
        return;
    }
    key->last_answer = GATE_TYPE_RELAY_ON;
    gate_device_relay *relay = hold(device, header->gate, now_ms, actions);
    relay->key_index = (uint8_t)(key - device->keys);
    relay->counter = header->counter;
    add_peer(relay, from);
    reply(device, actions, key, GATE_TYPE_RELAY_ON, header->gate, header->counter, from);
}

/* Rule 1, then the request's own rules. Whatever fails rule 1 gets no word at all: no
 * oracle for forgers, no amplification for spoofed senders. */
static void judge_frame(gate_device *device, uint64_t now_ms, const uint8_t frame[GATE_FRAME_SIZE],
                        const gate_peer *from, gate_actions *actions) {
    gate_header header;
    gate_frame_read(frame, &header);
    if (header.version != GATE_VERSION) return;
    if (header.type != GATE_TYPE_OPEN && header.type != GATE_TYPE_STATUS_QUERY) return;
    gate_device_key *key = find_key(device, header.key_id);
    if (key == NULL || header.gate >= device->relay_count) return;
    if (header.type == GATE_TYPE_OPEN && header.counter == 0) return;
    if (!gate_frame_tag_valid(frame, key->keys.c2d)) return;
    if (header.type == GATE_TYPE_OPEN) {
        judge_open(device, now_ms, key, &header, from, actions);
    } else {
        gate_type status = gate_device_accepts_v1(device) ? GATE_TYPE_STATUS_V1_ACCEPTED
                                                          : GATE_TYPE_STATUS;
        reply(device, actions, key, status, header.gate, header.counter, from);
    }
}

/* v1: relay 0 cycles unless it is held (then the trigger is ignored, as v1 firmware does). */
static void judge_v1(gate_device *device, uint64_t now_ms, const gate_peer *from,
                     gate_actions *actions) {
    if (!gate_device_accepts_v1(device) || device->relays[0].held) return;
    gate_device_relay *relay = hold(device, 0, now_ms, actions);
    relay->v1 = true;
    if (from->via == GATE_VIA_UDP) add_peer(relay, from);
    reply_v1(actions, from, 0x01);
}

/* ---- Entry points ---- */

void gate_device_init(gate_device *device, uint8_t relay_count, bool migration) {
    memset(device, 0, sizeof *device);
    if (relay_count < 1) relay_count = 1;
    if (relay_count > GATE_MAX_RELAYS) relay_count = GATE_MAX_RELAYS;
    device->relay_count = relay_count;
    device->migration = migration;
    device->hold_ms = GATE_RELAY_HOLD_MS;
    device->epoch_period_ms = GATE_EPOCH_PERIOD_MS;
}

bool gate_device_add_key(gate_device *device, uint8_t key_id, const uint8_t key[GATE_KEY_SIZE]) {
    if (key_id == 0 || device->key_count >= GATE_MAX_KEYS || find_key(device, key_id) != NULL) {
        return false;
    }
    gate_device_key *entry = &device->keys[device->key_count++];
    memset(entry, 0, sizeof *entry);
    entry->key_id = key_id;
    gate_direction_keys_derive(key, &entry->keys);
    return true;
}

bool gate_device_boot(gate_device *device, uint64_t now_ms, uint32_t random) {
    if (random == 0) return false;
    device->epoch = random;
    device->previous_epoch = 0;
    device->rotate_at_ms = now_ms + device->epoch_period_ms;
    for (uint8_t i = 0; i < device->key_count; i++) {
        device->keys[i].last = 0;
        device->keys[i].last_answer = GATE_TYPE_NONE;
        device->keys[i].last_gate = 0;
    }
    memset(device->relays, 0, sizeof device->relays);
    return true;
}

bool gate_device_accepts_v1(const gate_device *device) {
    return device->key_count == 0 || device->migration;
}

void gate_device_udp(gate_device *device, uint64_t now_ms, uint32_t random, const gate_peer *from,
                     const uint8_t *bytes, size_t length, gate_actions *actions) {
    actions->count = 0;
    if (device->epoch == 0) return;
    advance(device, now_ms, random, actions);
    gate_peer peer = *from;
    peer.via = GATE_VIA_UDP;
    if (length == GATE_FRAME_SIZE) {
        judge_frame(device, now_ms, bytes, &peer, actions);
    } else if (length == 1 && bytes[0] == 0x01) {
        judge_v1(device, now_ms, &peer, actions);
    }
}

void gate_device_mqtt(gate_device *device, uint64_t now_ms, uint32_t random, const char *payload,
                      size_t length, gate_actions *actions) {
    actions->count = 0;
    if (device->epoch == 0) return;
    advance(device, now_ms, random, actions);
    uint8_t frame[GATE_FRAME_SIZE];
    if (gate_frame_from_hex(payload, length, frame)) {
        judge_frame(device, now_ms, frame, &mqtt_peer, actions);
    }
}

void gate_device_mqtt_v1(gate_device *device, uint64_t now_ms, uint32_t random,
                         gate_actions *actions) {
    actions->count = 0;
    if (device->epoch == 0) return;
    advance(device, now_ms, random, actions);
    judge_v1(device, now_ms, &mqtt_peer, actions);
}

void gate_device_tick(gate_device *device, uint64_t now_ms, uint32_t random, gate_actions *actions) {
    actions->count = 0;
    if (device->epoch == 0) return;
    advance(device, now_ms, random, actions);
}

void gate_device_announce(const gate_device *device, gate_actions *actions) {
    actions->count = 0;
    if (device->epoch == 0) return;
    append_announcements(device, actions);
}

uint64_t gate_device_next_deadline(const gate_device *device) {
    if (device->epoch == 0) return UINT64_MAX;
    uint64_t deadline = device->rotate_at_ms;
    for (uint8_t i = 0; i < device->relay_count; i++) {
        const gate_device_relay *relay = &device->relays[i];
        if (relay->held && relay->release_at_ms < deadline) deadline = relay->release_at_ms;
    }
    return deadline;
}
