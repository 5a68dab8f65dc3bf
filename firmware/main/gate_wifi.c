/* Wi-Fi station (ESP-IDF's examples/wifi/getting_started/station, rejoining for ever:
 * the relay is no use offline, and each try is cheap). */
#include <string.h>

#include "esp_event.h"
#include "esp_log.h"
#include "esp_netif.h"
#include "esp_wifi.h"

#include "gate_port.h"

static const char *TAG = "gate-wifi";

static void on_event(void *arg, esp_event_base_t base, int32_t id, void *data) {
    (void)arg;
    if (base == WIFI_EVENT && (id == WIFI_EVENT_STA_START || id == WIFI_EVENT_STA_DISCONNECTED)) {
        esp_wifi_connect();
    } else if (base == IP_EVENT && id == IP_EVENT_STA_GOT_IP) {
        const ip_event_got_ip_t *got = data;
        ESP_LOGI(TAG, "joined %s as " IPSTR, CONFIG_GATE_WIFI_SSID, IP2STR(&got->ip_info.ip));
    }
}

void gate_wifi_start(void) {
    ESP_ERROR_CHECK(esp_netif_init());
    ESP_ERROR_CHECK(esp_event_loop_create_default());
    esp_netif_create_default_wifi_sta();
    wifi_init_config_t init = WIFI_INIT_CONFIG_DEFAULT();
    ESP_ERROR_CHECK(esp_wifi_init(&init));
    ESP_ERROR_CHECK(esp_event_handler_instance_register(WIFI_EVENT, ESP_EVENT_ANY_ID, on_event, NULL, NULL));
    ESP_ERROR_CHECK(esp_event_handler_instance_register(IP_EVENT, IP_EVENT_STA_GOT_IP, on_event, NULL, NULL));
    wifi_config_t config;
    memset(&config, 0, sizeof config);
    strlcpy((char *)config.sta.ssid, CONFIG_GATE_WIFI_SSID, sizeof config.sta.ssid);
    strlcpy((char *)config.sta.password, CONFIG_GATE_WIFI_PASSWORD, sizeof config.sta.password);
    config.sta.threshold.authmode = strlen(CONFIG_GATE_WIFI_PASSWORD) > 0 ? WIFI_AUTH_WPA2_PSK : WIFI_AUTH_OPEN;
    ESP_ERROR_CHECK(esp_wifi_set_mode(WIFI_MODE_STA));
    ESP_ERROR_CHECK(esp_wifi_set_config(WIFI_IF_STA, &config));
    ESP_ERROR_CHECK(esp_wifi_start());
    /* No modem sleep: with it a datagram can wait for the next beacon, 100 ms or more. */
    ESP_ERROR_CHECK(esp_wifi_set_ps(WIFI_PS_NONE));
}
