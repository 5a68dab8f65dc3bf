/* The firmware's start and its one gate task: the core (gate_device) is owned by that
 * task alone, fed through a queue by the UDP task and the MQTT handler, and woken at the
 * core's next deadline (a relay's release, the epoch's rotation). */
#include <inttypes.h>

#include "driver/gpio.h"
#include "esp_log.h"
#include "esp_random.h"
#include "esp_timer.h"
#include "freertos/FreeRTOS.h"
#include "freertos/queue.h"
#include "freertos/task.h"
#include "nvs_flash.h"

#include "gate_port.h"

static const char *TAG = "gate";
static gate_device device;   /* the gate task's, once it runs */
static gate_actions actions; /* static: about 2 KB, kept off the task's stack */
static QueueHandle_t events;

/* The level first, then the pin as an output without pull-up: it never drives high,
 * not for an instant (gpio_reset_pin would enable the pull-up). Until this runs, keep
 * the pin low with a pull-down resistor on the board (README.md). */
static void relay_low_first_thing(void) {
    gpio_set_level(CONFIG_GATE_RELAY_GPIO, 0);
    gpio_config_t pin = {
        .pin_bit_mask = 1ULL << CONFIG_GATE_RELAY_GPIO,
        .mode = GPIO_MODE_OUTPUT,
        .pull_up_en = GPIO_PULLUP_DISABLE,
        .pull_down_en = GPIO_PULLDOWN_ENABLE,
        .intr_type = GPIO_INTR_DISABLE,
    };
    ESP_ERROR_CHECK(gpio_config(&pin));
    gpio_set_level(CONFIG_GATE_RELAY_GPIO, 0);
}

static uint64_t now_ms(void) {
    return (uint64_t)esp_timer_get_time() / 1000;
}

bool gate_post(const gate_event *event) {
    return xQueueSend(events, event, 0) == pdTRUE;
}

/* In the core's order: the relay moves before the replies that report it. The GPIO is
 * set at once; the network calls do not block (a 0x91 must never wait on the broker).
 * The plain `1`/`0` is published after the batch's replies: two small publishes back to
 * back meet Nagle's algorithm (lwIP's default), which holds the second until the broker
 * acknowledges the first (a delayed ACK: tens of ms), and the signed reply is what a v2
 * client waits for. */
static void carry_out(const gate_actions *list) {
    bool plain[GATE_MAX_ACTIONS]; /* the relay's changes in this batch, published last */
    size_t changes = 0;
    for (size_t i = 0; i < list->count; i++) {
        const gate_action *a = &list->items[i];
        switch ((gate_action_kind)a->kind) {
        case GATE_ACTION_RELAY_ON:
        case GATE_ACTION_RELAY_OFF:
            gpio_set_level(CONFIG_GATE_RELAY_GPIO, a->kind == GATE_ACTION_RELAY_ON);
            ESP_LOGI(TAG, "relay %s", a->kind == GATE_ACTION_RELAY_ON ? "on" : "off");
            plain[changes++] = a->kind == GATE_ACTION_RELAY_ON;
            break;
        case GATE_ACTION_REPLY:
            if (a->peer.via == GATE_VIA_UDP) gate_udp_send(&a->peer, a->frame, GATE_FRAME_SIZE);
            else gate_mqtt_publish_reply(a->frame);
            break;
        case GATE_ACTION_REPLY_V1:
            gate_udp_send(&a->peer, a->frame, 1);
            break;
        case GATE_ACTION_ANNOUNCE:
            gate_mqtt_publish_announcement(a->key_id, a->frame);
            break;
        }
    }
    for (size_t i = 0; i < changes; i++) gate_mqtt_publish_relay(plain[i]);
}

static void handle(const gate_event *event, uint64_t now) {
    switch ((gate_event_kind)event->kind) {
    case GATE_EVENT_UDP:
        gate_device_udp(&device, now, esp_random(), &event->from, event->bytes, event->length, &actions);
        break;
    case GATE_EVENT_MQTT:
        gate_device_mqtt(&device, now, esp_random(), (const char *)event->bytes, event->length, &actions);
        break;
    case GATE_EVENT_MQTT_V1:
        gate_device_mqtt_v1(&device, now, esp_random(), &actions);
        break;
    case GATE_EVENT_MQTT_CONNECTED:
        gate_device_tick(&device, now, esp_random(), &actions);
        carry_out(&actions);
        gate_device_announce(&device, &actions);
        break;
    }
}

/* Waits for an event or the next deadline, whichever comes first; one tick late at most. */
static void gate_task(void *unused) {
    (void)unused;
    gate_event event;
    for (;;) {
        uint64_t now = now_ms(), deadline = gate_device_next_deadline(&device);
        uint64_t wait_ms = deadline <= now ? 0 : deadline - now;
        if (wait_ms > 60000) wait_ms = 60000;
        TickType_t wait = wait_ms == 0 ? 0 : pdMS_TO_TICKS(wait_ms) + 1;
        if (xQueueReceive(events, &event, wait) == pdTRUE) {
            handle(&event, now_ms());
        } else {
            gate_device_tick(&device, now_ms(), esp_random(), &actions);
        }
        carry_out(&actions);
    }
}

static void nvs_start(void) {
    esp_err_t status = nvs_flash_init();
    if (status == ESP_ERR_NVS_NO_FREE_PAGES || status == ESP_ERR_NVS_NEW_VERSION_FOUND) {
        ESP_ERROR_CHECK(nvs_flash_erase());
        status = nvs_flash_init();
    }
    ESP_ERROR_CHECK(status);
}

/* The epoch is drawn once the radio runs: only then is esp_random() truly random. */
static void boot_device(void) {
    while (!gate_device_boot(&device, now_ms(), esp_random())) {
    }
    ESP_LOGI(TAG, "%u key(s); v1 %s; epoch drawn", device.key_count,
             gate_device_accepts_v1(&device) ? "accepted" : "refused");
}

void app_main(void) {
    relay_low_first_thing();
    nvs_start();
    gate_device_init(&device, 1, false);
    if (!gate_keys_load(&device)) {
        ESP_LOGE(TAG, "stopped: a provisioned key is not 64 hex characters (see above); the relay stays off");
        return;
    }
    events = xQueueCreate(8, sizeof(gate_event));
    gate_wifi_start();
    boot_device();
    xTaskCreate(gate_task, "gate", 4096, NULL, 10, NULL);
    gate_udp_start();
    gate_mqtt_start(gate_device_accepts_v1(&device), device.key_count > 0);
}
