/* The provisioned keys: NVS namespace "gate" (entries key1 ... key255, 64 hex characters
 * each, and the u8 "migration"), then the one key of menuconfig. A key present but
 * malformed stops the firmware: falling back to v1 would leave the gate open to anyone. */
#include <stdio.h>
#include <string.h>

#include "esp_log.h"
#include "nvs.h"

#include "gate_port.h"

static const char *TAG = "gate-keys";

static bool add_key_text(gate_device *device, unsigned key_id, const char *text, const char *where) {
    uint8_t key[GATE_KEY_SIZE];
    if (!gate_key_parse(text, strlen(text), key)) {
        ESP_LOGE(TAG, "key %u in %s: not 64 hex characters", key_id, where);
        return false;
    }
    if (gate_device_add_key(device, (uint8_t)key_id, key)) {
        ESP_LOGI(TAG, "key %u from %s", key_id, where);
    } else {
        ESP_LOGW(TAG, "key %u in %s: ignored (already provisioned, or more than %d keys)", key_id, where,
                 GATE_MAX_KEYS);
    }
    gate_wipe(key, sizeof key);
    return true;
}

static bool load_nvs(gate_device *device) {
    nvs_handle_t nvs;
    if (nvs_open("gate", NVS_READONLY, &nvs) != ESP_OK) return true; /* nothing provisioned there */
    uint8_t migration;
    if (nvs_get_u8(nvs, "migration", &migration) == ESP_OK) device->migration = migration != 0;
    bool ok = true;
    for (unsigned id = 1; id <= 255 && ok; id++) {
        char name[8], text[GATE_KEY_HEX_SIZE + 4];
        size_t length = sizeof text;
        snprintf(name, sizeof name, "key%u", id);
        esp_err_t status = nvs_get_str(nvs, name, text, &length);
        if (status == ESP_ERR_NVS_NOT_FOUND) continue;
        if (status != ESP_OK) ESP_LOGE(TAG, "key %u in NVS: unreadable (%s)", id, esp_err_to_name(status));
        ok = status == ESP_OK && add_key_text(device, id, text, "NVS");
        memset(text, 0, sizeof text);
    }
    nvs_close(nvs);
    return ok;
}

bool gate_keys_load(gate_device *device) {
#ifdef CONFIG_GATE_V1_MIGRATION
    device->migration = true;
#endif
    if (!load_nvs(device)) return false;
    if (strlen(CONFIG_GATE_KEY) == 0) return true;
    return add_key_text(device, CONFIG_GATE_KEY_ID, CONFIG_GATE_KEY, "menuconfig");
}
