/*
 * The core's SHA-256 and HMAC-SHA256 against two other implementations: Debian's mbedTLS
 * (libmbedtls-dev, -lmbedcrypto; the library ESP-IDF itself ships) and OpenSSL's
 * libcrypto. Over the hmac records of the vectors file, and over thousands of random
 * keys and messages of every length around the 64-byte block, with the direction keys
 * and frame tags built from them.
 *
 * Usage: hmac_crosscheck VECTORS-FILE [COUNT]. Ends with "N passed, M failed".
 */
#include "gate_protocol.h"

#include <mbedtls/md.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void report(bool ok, const char *what, unsigned long case_number) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s (case %lu)\n", what, case_number);
    }
}

static void mbedtls_hmac(const uint8_t *key, size_t key_length, const uint8_t *message, size_t length,
                         uint8_t mac[32]) {
    const mbedtls_md_info_t *sha256 = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    if (sha256 == NULL || mbedtls_md_hmac(sha256, key, key_length, message, length, mac) != 0) {
        fprintf(stderr, "hmac_crosscheck: mbedtls_md_hmac failed\n");
        exit(2);
    }
}

static void openssl_hmac(const uint8_t *key, size_t key_length, const uint8_t *message, size_t length,
                         uint8_t mac[32]) {
    unsigned int mac_length = 0;
    static const uint8_t empty[1];
    if (HMAC(EVP_sha256(), key_length ? key : empty, (int)key_length, length ? message : empty, length,
             mac, &mac_length) == NULL || mac_length != 32) {
        fprintf(stderr, "hmac_crosscheck: OpenSSL HMAC failed\n");
        exit(2);
    }
}

/* One key and message: the core's HMAC and SHA-256 against both libraries. */
static void compare(const uint8_t *key, size_t key_length, const uint8_t *message, size_t length,
                    unsigned long case_number) {
    uint8_t ours[32], theirs[32];
    gate_hmac_sha256(key, key_length, message, length, ours);
    mbedtls_hmac(key, key_length, message, length, theirs);
    report(memcmp(ours, theirs, 32) == 0, "HMAC-SHA256 differs from mbedTLS", case_number);
    openssl_hmac(key, key_length, message, length, theirs);
    report(memcmp(ours, theirs, 32) == 0, "HMAC-SHA256 differs from OpenSSL", case_number);
    unsigned int digest_length = 0;
    gate_sha256(message, length, ours);
    EVP_Digest(length ? message : ours, length, theirs, &digest_length, EVP_sha256(), NULL);
    report(digest_length == 32 && memcmp(ours, theirs, 32) == 0, "SHA-256 differs from OpenSSL", case_number);
}

/* A 32-byte key's direction keys and a frame's tag, as mbedTLS computes them. */
static void compare_frame(const uint8_t key[32], const uint8_t header_bytes[16], unsigned long case_number) {
    gate_direction_keys keys;
    gate_direction_keys_derive(key, &keys);
    uint8_t c2d[32], tag[32], frame[GATE_FRAME_SIZE];
    mbedtls_hmac(key, 32, (const uint8_t *)"gate v2 c2d", 11, c2d);
    report(memcmp(keys.c2d, c2d, 32) == 0, "K_c2d differs from mbedTLS", case_number);
    gate_header header;
    memcpy(frame, header_bytes, 16);
    gate_frame_read(frame, &header); /* bytes 0..15 only */
    gate_frame_write(&header, keys.c2d, frame);
    report(memcmp(frame, header_bytes, 16) == 0, "header did not round-trip", case_number);
    mbedtls_hmac(c2d, 32, header_bytes, 16, tag);
    report(memcmp(frame + 16, tag, 16) == 0, "frame tag differs from mbedTLS", case_number);
}

static int nibble(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static size_t hex(const char *text, size_t length, uint8_t *out) {
    if (length == 1 && text[0] == '-') return 0;
    for (size_t i = 0; i + 1 < length; i += 2) out[i / 2] = (uint8_t)(nibble(text[i]) << 4 | nibble(text[i + 1]));
    return length / 2;
}

/* The vectors file's "hmac KEY MESSAGE MAC" records, checked by both libraries too. */
static int vectors(const char *path) {
    FILE *file = fopen(path, "r");
    if (file == NULL) return -1;
    static char line[4096];
    unsigned long records = 0;
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, "hmac ", 5) != 0) continue;
        char *key = line + 5, *message = strchr(key, ' ');
        if (message == NULL) continue;
        *message++ = '\0';
        char *end = strchr(message, ' ');
        if (end == NULL) continue;
        *end = '\0';
        static uint8_t k[512], m[512];
        size_t key_length = hex(key, strlen(key), k), length = hex(message, strlen(message), m);
        compare(k, key_length, m, length, ++records);
    }
    fclose(file);
    return (int)records;
}

static uint64_t state = 0x9e3779b97f4a7c15u; /* fixed: a failure reproduces */

static uint8_t next_byte(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint8_t)(state >> 24);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s VECTORS-FILE [COUNT]\n", argv[0]);
        return 2;
    }
    int records = vectors(argv[1]);
    if (records < 7) {
        fprintf(stderr, "hmac_crosscheck: %s: expected at least the 7 RFC 4231 records, found %d\n", argv[1], records);
        return 2;
    }
    unsigned long count = argc > 2 ? strtoul(argv[2], NULL, 10) : 3000;
    static uint8_t key[200], message[300];
    for (unsigned long i = 0; i < count; i++) {
        /* Lengths cycle through every value so the block boundaries (55, 56, 64, 65, 119,
         * 128) are all hit, with random contents. */
        size_t key_length = i % sizeof key, length = (i * 7) % sizeof message;
        for (size_t j = 0; j < key_length; j++) key[j] = next_byte();
        for (size_t j = 0; j < length; j++) message[j] = next_byte();
        compare(key, key_length, message, length, 1000 + i);
        if (key_length >= 32 && length >= 16) compare_frame(key, message, 1000 + i);
    }
    printf("hmac_crosscheck: %d hmac records and %lu random cases against mbedTLS and OpenSSL\n",
           records, count);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
