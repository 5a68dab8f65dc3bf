/* The broker connection (esp-mqtt, as in ESP-IDF's examples/protocols/mqtt): requests in,
 * relay reports, signed replies and retained epoch announcements out. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "esp_log.h"
#include "mqtt_client.h"

#include "gate_port.h"

static const char *TAG = "gate-mqtt";
static esp_mqtt_client_handle_t client;
static atomic_bool connected;
static bool subscribe_v1, subscribe_v2;
static char trigger_v2[160], replies[160];

static bool topic_is(const esp_mqtt_event_t *e, const char *topic) {
    return e->topic_len == (int)strlen(topic) && memcmp(e->topic, topic, (size_t)e->topic_len) == 0;
}

/* Only a message in one piece and not retained: a retained trigger, replayed by the
 * broker at every connection, must never open the gate. */
static void on_message(const esp_mqtt_event_t *e) {
    if (e->retain || e->current_data_offset != 0 || e->data_len != e->total_data_len) return;
    gate_event event;
    memset(&event, 0, sizeof event);
    if (subscribe_v2 && topic_is(e, trigger_v2)) {
        if (e->data_len > (int)sizeof event.bytes) return; /* longer than a frame's hex */
        event.kind = GATE_EVENT_MQTT;
        event.length = (uint8_t)e->data_len;
        memcpy(event.bytes, e->data, (size_t)e->data_len);
    } else if (subscribe_v1 && topic_is(e, CONFIG_GATE_MQTT_TRIGGER_TOPIC)) {
        event.kind = GATE_EVENT_MQTT_V1;
    } else {
        return;
    }
    if (!gate_post(&event)) ESP_LOGW(TAG, "busy: a message dropped");
}

static void on_event(void *arg, esp_event_base_t base, int32_t id, void *data) {
    (void)arg;
    (void)base;
    gate_event connected_event = {.kind = GATE_EVENT_MQTT_CONNECTED};
    switch ((esp_mqtt_event_id_t)id) {
    case MQTT_EVENT_CONNECTED:
        atomic_store(&connected, true);
        if (subscribe_v2) esp_mqtt_client_subscribe(client, (const char *)trigger_v2, 0);
        if (subscribe_v1) esp_mqtt_client_subscribe(client, (const char *)CONFIG_GATE_MQTT_TRIGGER_TOPIC, 0);
        gate_post(&connected_event);
        break;
    case MQTT_EVENT_DISCONNECTED:
        atomic_store(&connected, false);
        break;
    case MQTT_EVENT_DATA:
        on_message(data);
        break;
    default:
        break;
    }
}

/* Queued for the MQTT task (esp_mqtt_client_publish may block for seconds). QoS 0 while
 * disconnected is dropped, not kept: a late relay report would be a false one. */
static void publish(const char *topic, const char *payload, int length, bool retain) {
    if (client == NULL || !atomic_load(&connected)) return;
    if (esp_mqtt_client_enqueue(client, topic, payload, length, 0, retain, true) < 0) {
        ESP_LOGW(TAG, "%s: could not queue the message", topic);
    }
}

void gate_mqtt_publish_relay(bool on) {
    publish(CONFIG_GATE_MQTT_STATUS_TOPIC, on ? "1" : "0", 1, false);
}

void gate_mqtt_publish_reply(const uint8_t frame[GATE_FRAME_SIZE]) {
    char hex[GATE_FRAME_HEX_SIZE];
    gate_hex_encode(frame, GATE_FRAME_SIZE, hex);
    publish(replies, hex, GATE_FRAME_HEX_SIZE, false);
}

void gate_mqtt_publish_announcement(uint8_t key_id, const uint8_t frame[GATE_FRAME_SIZE]) {
    char topic[192], hex[GATE_FRAME_HEX_SIZE];
    snprintf(topic, sizeof topic, "%s/v2/epoch/%u", CONFIG_GATE_MQTT_STATUS_TOPIC, key_id);
    gate_hex_encode(frame, GATE_FRAME_SIZE, hex);
    publish(topic, hex, GATE_FRAME_HEX_SIZE, true);
}

void gate_mqtt_start(bool v1, bool v2) {
    if (strlen(CONFIG_GATE_MQTT_URI) == 0) {
        ESP_LOGI(TAG, "no broker configured: UDP only");
        return;
    }
    subscribe_v1 = v1;
    subscribe_v2 = v2;
    snprintf(trigger_v2, sizeof trigger_v2, "%s/v2", CONFIG_GATE_MQTT_TRIGGER_TOPIC);
    snprintf(replies, sizeof replies, "%s/v2", CONFIG_GATE_MQTT_STATUS_TOPIC);
    esp_mqtt_client_config_t config;
    memset(&config, 0, sizeof config);
    config.broker.address.uri = CONFIG_GATE_MQTT_URI;
    if (strlen(CONFIG_GATE_MQTT_USERNAME) > 0) config.credentials.username = CONFIG_GATE_MQTT_USERNAME;
    if (strlen(CONFIG_GATE_MQTT_PASSWORD) > 0) config.credentials.authentication.password = CONFIG_GATE_MQTT_PASSWORD;
    client = esp_mqtt_client_init(&config);
    if (client == NULL) {
        ESP_LOGE(TAG, "esp_mqtt_client_init failed: check CONFIG_GATE_MQTT_URI");
        return;
    }
    esp_mqtt_client_register_event(client, ESP_EVENT_ANY_ID, on_event, NULL);
    esp_mqtt_client_start(client);
}
