/* Frames, direction keys, hex, and the client's side of protocol v2. */
#include "gate_protocol.h"

#include <string.h>

static const char c2d_label[] = "gate v2 c2d"; /* ASCII, no NUL: sizeof - 1 */
static const char d2c_label[] = "gate v2 d2c";

void gate_direction_keys_derive(const uint8_t key[GATE_KEY_SIZE], gate_direction_keys *keys) {
    gate_hmac_sha256(key, GATE_KEY_SIZE, (const uint8_t *)c2d_label, sizeof c2d_label - 1, keys->c2d);
    gate_hmac_sha256(key, GATE_KEY_SIZE, (const uint8_t *)d2c_label, sizeof d2c_label - 1, keys->d2c);
}

/* ---- Hex ---- */

static int hex_value(char c, bool lowercase_only) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (!lowercase_only && c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool hex_decode(const char *hex, size_t length, uint8_t *out, size_t capacity,
                       bool lowercase_only) {
    if (length != 2 * capacity) return false;
    for (size_t i = 0; i < capacity; i++) {
        int high = hex_value(hex[2 * i], lowercase_only);
        int low = hex_value(hex[2 * i + 1], lowercase_only);
        if (high < 0 || low < 0) return false;
        out[i] = (uint8_t)(high << 4 | low);
    }
    return true;
}

void gate_hex_encode(const uint8_t *bytes, size_t count, char *hex) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < count; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 0x0f];
    }
}

bool gate_hex_decode(const char *hex, size_t length, uint8_t *out, size_t capacity) {
    return hex_decode(hex, length, out, capacity, false);
}

bool gate_frame_from_hex(const char *payload, size_t length, uint8_t frame[GATE_FRAME_SIZE]) {
    return hex_decode(payload, length, frame, GATE_FRAME_SIZE, true);
}

bool gate_key_parse(const char *text, size_t length, uint8_t key[GATE_KEY_SIZE]) {
    if (length > 0 && text[length - 1] == '\n') {
        length--;
        if (length > 0 && text[length - 1] == '\r') length--;
    }
    if (hex_decode(text, length, key, GATE_KEY_SIZE, false)) return true;
    gate_wipe(key, GATE_KEY_SIZE);
    return false;
}

/* ---- Frames ---- */

static void compute_tag(const uint8_t frame[GATE_FRAME_SIZE],
                        const uint8_t direction_key[GATE_SHA256_SIZE], uint8_t tag[GATE_SHA256_SIZE]) {
    gate_hmac_sha256(direction_key, GATE_SHA256_SIZE, frame, GATE_SIGNED_SIZE, tag);
}

void gate_frame_write(const gate_header *header, const uint8_t direction_key[GATE_SHA256_SIZE],
                      uint8_t frame[GATE_FRAME_SIZE]) {
    frame[0] = header->version;
    frame[1] = header->type;
    frame[2] = header->key_id;
    frame[3] = header->gate;
    for (unsigned i = 0; i < 4; i++) frame[4 + i] = (uint8_t)(header->epoch >> (24 - 8 * i));
    for (unsigned i = 0; i < 8; i++) frame[8 + i] = (uint8_t)(header->counter >> (56 - 8 * i));
    uint8_t tag[GATE_SHA256_SIZE];
    compute_tag(frame, direction_key, tag);
    memcpy(frame + GATE_SIGNED_SIZE, tag, GATE_TAG_SIZE);
}

void gate_frame_read(const uint8_t frame[GATE_FRAME_SIZE], gate_header *header) {
    header->version = frame[0];
    header->type = frame[1];
    header->key_id = frame[2];
    header->gate = frame[3];
    header->epoch = 0;
    for (unsigned i = 0; i < 4; i++) header->epoch = header->epoch << 8 | frame[4 + i];
    header->counter = 0;
    for (unsigned i = 0; i < 8; i++) header->counter = header->counter << 8 | frame[8 + i];
}

bool gate_frame_tag_valid(const uint8_t frame[GATE_FRAME_SIZE],
                          const uint8_t direction_key[GATE_SHA256_SIZE]) {
    uint8_t tag[GATE_SHA256_SIZE];
    compute_tag(frame, direction_key, tag);
    return gate_equal_in_constant_time(tag, frame + GATE_SIGNED_SIZE, GATE_TAG_SIZE);
}

/* ---- The client's side ---- */

static void client_request(const gate_direction_keys *keys, uint8_t type, uint8_t key_id,
                           uint8_t gate, uint32_t epoch, uint64_t counter,
                           uint8_t frame[GATE_FRAME_SIZE]) {
    gate_header header = {GATE_VERSION, type, key_id, gate, epoch, counter};
    gate_frame_write(&header, keys->c2d, frame);
}

void gate_client_open(const gate_direction_keys *keys, uint8_t key_id, uint8_t gate, uint32_t epoch,
                      uint64_t counter, uint8_t frame[GATE_FRAME_SIZE]) {
    client_request(keys, GATE_TYPE_OPEN, key_id, gate, epoch, counter, frame);
}

void gate_client_status_query(const gate_direction_keys *keys, uint8_t key_id, uint8_t gate,
                              uint32_t epoch, uint64_t counter, uint8_t frame[GATE_FRAME_SIZE]) {
    client_request(keys, GATE_TYPE_STATUS_QUERY, key_id, gate, epoch, counter, frame);
}

static bool is_reply_type(uint8_t type) {
    switch (type) {
    case GATE_TYPE_RELAY_ON:
    case GATE_TYPE_RELAY_OFF:
    case GATE_TYPE_STATUS:
    case GATE_TYPE_BUSY:
    case GATE_TYPE_STATUS_V1_ACCEPTED:
    case GATE_TYPE_STALE_EPOCH:
        return true;
    default:
        return false;
    }
}

gate_type gate_client_check_reply(const gate_direction_keys *keys, uint8_t key_id, uint8_t gate,
                                  uint64_t counter, const uint8_t *bytes, size_t length,
                                  uint32_t *epoch) {
    if (length != GATE_FRAME_SIZE) return GATE_TYPE_NONE;
    gate_header header;
    gate_frame_read(bytes, &header);
    if (header.version != GATE_VERSION || !is_reply_type(header.type)) return GATE_TYPE_NONE;
    if (header.key_id != key_id || header.gate != gate || header.counter != counter) {
        return GATE_TYPE_NONE;
    }
    /* Checked with d2c: a request of ours reflected back (signed with c2d) fails here. */
    if (!gate_frame_tag_valid(bytes, keys->d2c)) return GATE_TYPE_NONE;
    *epoch = header.epoch;
    return (gate_type)header.type;
}
