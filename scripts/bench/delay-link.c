/* A slow wire between two network namespaces for scripts/bench/remote: a TUN device
 * in each, and every IP packet read from one written into the other DELAY_MS later,
 * in order. This kernel has no sch_netem; a TCP relay would answer the SYN at once
 * and hide the connect's round trip, while a packet delay costs every packet the same
 * as a long route does: SYN and SYN-ACK, each TLS flight, each MQTT packet, the ACKs.
 * Usage: delay-link NETNS_A TUN_A NETNS_B TUN_B DELAY_MS [TRACE_FILE]
 * The TUN devices must exist (ip tuntap add ... mode tun). Prints `ready` once both
 * are attached; on SIGTERM or SIGINT prints the packet counts on stderr and exits 0.
 * With TRACE_FILE, one line per packet as it enters the wire: milliseconds on
 * CLOCK_MONOTONIC, direction (> from A, < from B), and for TCP over IPv4 the ports,
 * the flags (S syn, A ack, P push, F fin, R reset) and the payload's length: where
 * the round trips of an exchange go, without tcpdump. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MTU 2048
#define QUEUE 4096

struct packet { long long due_ns; size_t length; unsigned char bytes[MTU]; };
/* One queue per direction: a constant delay keeps arrival order, so a ring suffices. */
struct queue { struct packet slots[QUEUE]; size_t head, count; unsigned long passed, dropped; };

static struct queue toward_b, toward_a;
static FILE *trace;
static volatile sig_atomic_t stopping;

static void on_signal(int sig) { (void)sig; stopping = 1; }

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int attach(const char *netns, const char *device) {
    char path[256];
    snprintf(path, sizeof path, "/run/netns/%s", netns);
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0) { fprintf(stderr, "delay-link: cannot open namespace %s: open: %s\n", path, strerror(errno)); exit(1); }
    if (setns(ns, CLONE_NEWNET) != 0) { fprintf(stderr, "delay-link: cannot enter namespace %s: setns: %s\n", netns, strerror(errno)); exit(1); }
    close(ns);
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { fprintf(stderr, "delay-link: cannot open /dev/net/tun: %s\n", strerror(errno)); exit(1); }
    struct ifreq request;
    memset(&request, 0, sizeof request);
    request.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(request.ifr_name, IFNAMSIZ, "%s", device);
    if (ioctl(fd, TUNSETIFF, &request) != 0) {
        fprintf(stderr, "delay-link: cannot attach to %s in %s: TUNSETIFF: %s\n", device, netns, strerror(errno));
        exit(1);
    }
    return fd;
}

static void note(const struct packet *p, long long entered_ns, char direction) {
    const unsigned char *ip = p->bytes;
    fprintf(trace, "%.3f %c", entered_ns / 1e6, direction);
    if (p->length >= 20 && (ip[0] >> 4) == 4 && ip[9] == 6) {
        size_t header = (size_t)(ip[0] & 15) * 4, total = (size_t)(ip[2] << 8 | ip[3]);
        const unsigned char *tcp = ip + header;
        if (header + 20 <= p->length && total <= p->length) {
            size_t offset = (size_t)(tcp[12] >> 4) * 4;
            char flags[6], *f = flags;
            if (tcp[13] & 0x02) *f++ = 'S';
            if (tcp[13] & 0x10) *f++ = 'A';
            if (tcp[13] & 0x08) *f++ = 'P';
            if (tcp[13] & 0x01) *f++ = 'F';
            if (tcp[13] & 0x04) *f++ = 'R';
            *f = 0;
            fprintf(trace, " tcp %d>%d %s %zu", tcp[0] << 8 | tcp[1], tcp[2] << 8 | tcp[3], flags,
                    total >= header + offset ? total - header - offset : 0);
        }
    }
    fprintf(trace, " (%zu bytes)\n", p->length);
}

/* Reads every packet waiting on `fd` into `q`, each due `delay` from now. */
static void take(int fd, struct queue *q, long long delay) {
    for (;;) {
        if (q->count == QUEUE) {  /* full: read and drop, as a full router queue would */
            unsigned char sink[MTU];
            if (read(fd, sink, sizeof sink) < 0) return;
            q->dropped++;
            continue;
        }
        struct packet *p = &q->slots[(q->head + q->count) % QUEUE];
        ssize_t n = read(fd, p->bytes, sizeof p->bytes);
        if (n < 0) return;  /* EAGAIN: drained */
        p->length = (size_t)n;
        long long entered = now_ns();
        p->due_ns = entered + delay;
        if (trace) note(p, entered, q == &toward_b ? '>' : '<');
        q->count++;
    }
}

/* Writes every due packet of `q` into `fd`. */
static void give(int fd, struct queue *q) {
    long long now = now_ns();
    while (q->count > 0 && q->slots[q->head].due_ns <= now) {
        struct packet *p = &q->slots[q->head];
        if (write(fd, p->bytes, p->length) < 0) q->dropped++; else q->passed++;
        q->head = (q->head + 1) % QUEUE;
        q->count--;
    }
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: %s NETNS_A TUN_A NETNS_B TUN_B DELAY_MS [TRACE_FILE]\n", argv[0]);
        return 64;
    }
    if (argc == 7 && !(trace = fopen(argv[6], "w"))) {
        fprintf(stderr, "delay-link: cannot write the trace to %s: %s\n", argv[6], strerror(errno));
        return 1;
    }
    long long delay = atoll(argv[5]) * 1000000LL;
    int a = attach(argv[1], argv[2]);
    int b = attach(argv[3], argv[4]);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    printf("ready\n");
    fflush(stdout);

    while (!stopping) {
        long long next = -1;
        if (toward_b.count) next = toward_b.slots[toward_b.head].due_ns;
        if (toward_a.count && (next < 0 || toward_a.slots[toward_a.head].due_ns < next)) next = toward_a.slots[toward_a.head].due_ns;
        struct timespec wait, *timeout = NULL;
        if (next >= 0) {
            long long left = next - now_ns();
            if (left < 0) left = 0;
            wait.tv_sec = left / 1000000000LL;
            wait.tv_nsec = left % 1000000000LL;
            timeout = &wait;
        }
        struct pollfd fds[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };
        if (ppoll(fds, 2, timeout, NULL) < 0 && errno != EINTR) { perror("delay-link: ppoll"); return 1; }
        if (fds[0].revents & POLLIN) take(a, &toward_b, delay);
        if (fds[1].revents & POLLIN) take(b, &toward_a, delay);
        give(b, &toward_b);
        give(a, &toward_a);
    }
    if (trace) fclose(trace);
    fprintf(stderr, "delay-link: %lu packets %s -> %s, %lu back, %lu dropped\n",
            toward_b.passed, argv[1], argv[3], toward_a.passed, toward_b.dropped + toward_a.dropped);
    return 0;
}
