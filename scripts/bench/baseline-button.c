/* The baseline for scripts/bench/daemon: the least a button daemon must do
 * between an edge and the trigger datagram. It reads gpioevent_data records
 * from a FIFO with libgpiod's own gpiod_line_event_read_fd (as gate does) and
 * sends 0x01 to the ESP32 on every falling edge: no debounce, no lock, no status.
 * Usage: baseline-button FIFO HOST PORT */
#include <arpa/inet.h>
#include <fcntl.h>
#include <gpiod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s FIFO HOST PORT\n", argv[0]); return 64; }
    int fifo = open(argv[1], O_RDWR | O_CLOEXEC);
    if (fifo < 0) { perror("open"); return 1; }
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in esp32;
    memset(&esp32, 0, sizeof esp32);
    esp32.sin_family = AF_INET;
    esp32.sin_port = htons((unsigned short)atoi(argv[3]));
    if (inet_pton(AF_INET, argv[2], &esp32.sin_addr) != 1) { fprintf(stderr, "bad host\n"); return 64; }
    unsigned char trigger = 0x01;
    struct gpiod_line_event event;
    while (gpiod_line_event_read_fd(fifo, &event) == 0) {
        if (event.event_type == GPIOD_LINE_EVENT_FALLING_EDGE)
            sendto(sock, &trigger, 1, 0, (struct sockaddr *)&esp32, sizeof esp32);
    }
    return 0;
}
