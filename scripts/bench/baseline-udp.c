/* The baseline for scripts/bench: the least a one-shot UDP client must do to
 * confirm a relay cycle (send 0x01, wait for 0x01 then 0x00, 2 s budget).
 * Usage: baseline-udp HOST PORT; exit 0 on a complete cycle, 1 otherwise. */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s HOST PORT\n", argv[0]); return 64; }
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2])) };
    if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) { fprintf(stderr, "bad address\n"); return 64; }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof to) != 0) { perror("connect"); return 1; }
    unsigned char trigger = 1;
    if (send(fd, &trigger, 1, 0) != 1) { perror("send"); return 1; }
    long long deadline = now_ms() + 2000;
    int activated = 0;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return 1;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, (int)left) <= 0) return 1;
        unsigned char buffer[64];
        ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n < 0) return 1;
        for (ssize_t i = 0; i < n; i++) {
            if (buffer[i] == 1) activated = 1;
            else if (buffer[i] == 0 && activated) return 0;
            else return 1;
        }
    }
}
