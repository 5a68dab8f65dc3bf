/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104): small and plain rather than fast.
 * A frame costs four compressions to sign or check, which an ESP32 does in microseconds. */
#include "gate_protocol.h"

#include <string.h>

static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotate_right(uint32_t x, unsigned n) {
    return (x >> n) | (x << (32u - n));
}

static uint32_t load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void compress(uint32_t state[8], const uint8_t block[64]) {
    uint32_t w[64];
    for (unsigned i = 0; i < 16; i++) w[i] = load_be32(block + 4 * i);
    for (unsigned i = 16; i < 64; i++) {
        uint32_t s0 = rotate_right(w[i - 15], 7) ^ rotate_right(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotate_right(w[i - 2], 17) ^ rotate_right(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (unsigned i = 0; i < 64; i++) {
        uint32_t s1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
        uint32_t choice = (e & f) ^ (~e & g);
        uint32_t t1 = h + s1 + choice + round_constants[i] + w[i];
        uint32_t s0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
        uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = s0 + majority;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
    gate_wipe(w, sizeof w); /* the schedule holds key material when hashing an HMAC pad */
}

void gate_sha256_init(gate_sha256_context *context) {
    static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(context->state, initial, sizeof initial);
    context->length = 0;
    context->used = 0;
}

void gate_sha256_update(gate_sha256_context *context, const uint8_t *data, size_t length) {
    context->length += length;
    while (length > 0) {
        size_t take = 64 - context->used;
        if (take > length) take = length;
        memcpy(context->block + context->used, data, take);
        context->used += take;
        data += take;
        length -= take;
        if (context->used == 64) {
            compress(context->state, context->block);
            context->used = 0;
        }
    }
}

void gate_sha256_final(gate_sha256_context *context, uint8_t digest[GATE_SHA256_SIZE]) {
    uint64_t bits = context->length * 8;
    /* Padding: 0x80, zeros up to 56 mod 64, then the length in bits, big-endian. */
    uint8_t padding[72] = {0x80};
    size_t zeros = (context->used < 56) ? 56 - context->used : 120 - context->used;
    for (unsigned i = 0; i < 8; i++) padding[zeros + i] = (uint8_t)(bits >> (56 - 8 * i));
    gate_sha256_update(context, padding, zeros + 8);
    for (unsigned i = 0; i < 8; i++) store_be32(digest + 4 * i, context->state[i]);
    gate_wipe(context, sizeof *context);
}

void gate_sha256(const uint8_t *data, size_t length, uint8_t digest[GATE_SHA256_SIZE]) {
    gate_sha256_context context;
    gate_sha256_init(&context);
    gate_sha256_update(&context, data, length);
    gate_sha256_final(&context, digest);
}

/* HMAC(K, m) = H((K0 ^ opad) || H((K0 ^ ipad) || m)), K0 = K (or H(K) when longer than a
 * block) padded with zeros to 64 bytes. */
void gate_hmac_sha256(const uint8_t *key, size_t key_length, const uint8_t *message,
                      size_t message_length, uint8_t mac[GATE_SHA256_SIZE]) {
    uint8_t pad[64] = {0};
    if (key_length > sizeof pad) {
        gate_sha256(key, key_length, pad);
    } else if (key_length > 0) {
        memcpy(pad, key, key_length);
    }
    uint8_t inner[GATE_SHA256_SIZE];
    gate_sha256_context context;
    for (unsigned i = 0; i < 64; i++) pad[i] ^= 0x36;
    gate_sha256_init(&context);
    gate_sha256_update(&context, pad, sizeof pad);
    gate_sha256_update(&context, message, message_length);
    gate_sha256_final(&context, inner);
    for (unsigned i = 0; i < 64; i++) pad[i] ^= 0x36 ^ 0x5c;
    gate_sha256_init(&context);
    gate_sha256_update(&context, pad, sizeof pad);
    gate_sha256_update(&context, inner, sizeof inner);
    gate_sha256_final(&context, mac);
    gate_wipe(pad, sizeof pad);
    gate_wipe(inner, sizeof inner);
}

bool gate_equal_in_constant_time(const uint8_t *a, const uint8_t *b, size_t n) {
    /* Every byte is read whatever the first difference: the time says nothing about
     * how much of a forged tag was right. */
    volatile uint8_t difference = 0;
    for (size_t i = 0; i < n; i++) difference |= (uint8_t)(a[i] ^ b[i]);
    return difference == 0;
}

void gate_wipe(void *bytes, size_t n) {
    volatile uint8_t *p = (volatile uint8_t *)bytes;
    while (n-- > 0) *p++ = 0;
}
