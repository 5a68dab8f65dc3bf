/* The UDP socket (ESP-IDF's examples/protocols/sockets/udp_server, IPv4): its task posts
 * each datagram with its sender; the gate task answers through gate_udp_send. */
#include <errno.h>
#include <string.h>

#include "esp_log.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#include "lwip/sockets.h"

#include "gate_port.h"

_Static_assert(sizeof(struct sockaddr_in) <= GATE_PEER_ADDRESS_SIZE, "a peer holds an IPv4 address");

static const char *TAG = "gate-udp";
static int udp = -1;

static void udp_task(void *unused) {
    (void)unused;
    gate_event event;
    for (;;) {
        struct sockaddr_in from;
        socklen_t from_length = sizeof from;
        /* A 64-byte buffer: a longer datagram is cut to 64, never to the 32 or 1 byte
         * of a request, so the core still drops it. */
        int n = recvfrom(udp, event.bytes, sizeof event.bytes, 0, (struct sockaddr *)&from, &from_length);
        if (n < 0) {
            ESP_LOGW(TAG, "recvfrom failed: errno %d", errno);
            vTaskDelay(pdMS_TO_TICKS(100));
            continue;
        }
        event.kind = GATE_EVENT_UDP;
        event.length = (uint8_t)n;
        memset(&event.from, 0, sizeof event.from);
        memcpy(event.from.address, &from, sizeof from);
        if (!gate_post(&event)) ESP_LOGW(TAG, "busy: a datagram dropped");
    }
}

void gate_udp_start(void) {
    struct sockaddr_in any;
    memset(&any, 0, sizeof any);
    any.sin_family = AF_INET;
    any.sin_port = htons(CONFIG_GATE_UDP_PORT);
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    udp = socket(AF_INET, SOCK_DGRAM, IPPROTO_IP);
    if (udp < 0 || bind(udp, (struct sockaddr *)&any, sizeof any) < 0) {
        ESP_LOGE(TAG, "cannot listen on UDP port %d: errno %d", CONFIG_GATE_UDP_PORT, errno);
        return;
    }
    xTaskCreate(udp_task, "gate-udp", 3072, NULL, 9, NULL);
}

/* MSG_DONTWAIT: the gate task times the relay and must not wait on the network. */
void gate_udp_send(const gate_peer *to, const uint8_t *bytes, size_t length) {
    struct sockaddr_in address;
    memcpy(&address, to->address, sizeof address); /* an aligned copy */
    if (udp < 0) return;
    if (sendto(udp, bytes, length, MSG_DONTWAIT, (struct sockaddr *)&address, sizeof address) < 0) {
        ESP_LOGW(TAG, "sendto failed: errno %d", errno);
    }
}
