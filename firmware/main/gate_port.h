/* The ESP-IDF port's parts. Every decision is the core's (gate_protocol.h); these only
 * move bytes between it and the radio, the broker and the relay's GPIO. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gate_protocol.h"

typedef enum {
    GATE_EVENT_UDP,            /* a datagram: bytes[0..length), from */
    GATE_EVENT_MQTT,           /* a payload on <trigger>/v2 (at most 64 bytes) */
    GATE_EVENT_MQTT_V1,        /* a payload on <trigger> */
    GATE_EVENT_MQTT_CONNECTED, /* (re)connected: announce the epoch again */
} gate_event_kind;

typedef struct {
    uint8_t kind; /* a gate_event_kind */
    uint8_t length;
    gate_peer from;
    uint8_t bytes[GATE_FRAME_HEX_SIZE];
} gate_event;

/* gate_main.c: hands an event to the gate task, which owns the core. From any task;
 * false (the event dropped) when the queue is full. */
bool gate_post(const gate_event *event);

/* gate_keys.c: the provisioned keys and the migration setting, from NVS and menuconfig.
 * False when a key is present but malformed: the caller then stops. */
bool gate_keys_load(gate_device *device);

/* gate_wifi.c: joins the configured network and keeps rejoining it. */
void gate_wifi_start(void);

/* gate_udp.c: the socket on CONFIG_GATE_UDP_PORT; its task posts each datagram. */
void gate_udp_start(void);
void gate_udp_send(const gate_peer *to, const uint8_t *bytes, size_t length);

/* gate_mqtt.c: the broker connection (when CONFIG_GATE_MQTT_URI is set). Subscribes to
 * the v1 topic when v1 is accepted and to the v2 topic when a key is provisioned.
 * Publications never block the caller: they are queued for the MQTT task. */
void gate_mqtt_start(bool v1, bool v2);
void gate_mqtt_publish_relay(bool on);
void gate_mqtt_publish_reply(const uint8_t frame[GATE_FRAME_SIZE]);
void gate_mqtt_publish_announcement(uint8_t key_id, const uint8_t frame[GATE_FRAME_SIZE]);
