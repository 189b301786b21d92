/* ww-linkemu: every shaped link of a lab network in one process (docs/lab-layout.md).
 *
 * A link is two TAP devices (one in each end's namespace, made by the caller and handed over
 * on the control socket); a frame read from one is written to the other after its direction's
 * delay (+ uniform jitter, never reordered), dropped with its loss probability, paced at its
 * rate (a FIFO of at most `limit` frames, like netem's). One epoll loop, a timerfd armed at the
 * next departure: one read and one write per frame per hop, where VDE took three processes and
 * four socket hops (vde_switch, wirefilter, vde_switch).
 *
 * Control: a SOCK_SEQPACKET unix socket (argv[1]); one command per message, one answer
 * ("ok ..." or "err ..."):
 *   add ID            with two fds (SCM_RIGHTS): end a, end b
 *   set ID DIR DELAY_US JITTER_US LOSS_PPM RATE_BPS LIMIT      DIR: ab | ba
 *   del ID
 *   stats             one line per link: ID frames_ab lost_ab overflow_ab frames_ba lost_ba overflow_ba
 *   ping
 * Exits on SIGTERM/SIGINT (the TAP devices go with it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINKS 4096
#define FRAME_MAX 65536
#define BATCH 64

struct frame {
    struct frame *next;
    uint64_t due_ns;
    uint32_t len;
    unsigned char data[];
};

struct dir {                       /* one direction of a link: frames read on in_fd go to out_fd */
    int in_fd, out_fd;
    uint64_t delay_ns, jitter_ns, rate_bps;
    uint32_t loss_ppm, limit, queued;
    uint64_t busy_until, last_due;  /* pacing; no reordering */
    struct frame *head, *tail;
    uint64_t frames, lost, overflow;  /* overflow: queue full or the far end refused the write */
    struct dir *next_active, *prev_active;
    int active;
};

struct link {
    int used;
    struct dir d[2];                /* 0: a→b, 1: b→a */
};

static struct link links[MAX_LINKS];
static struct dir *active;          /* directions with queued frames */
static int ep, tfd, ctl;
static volatile sig_atomic_t stop;
static uint64_t rng = 88172645463325252ULL;
static unsigned char buf[FRAME_MAX];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(void) {         /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void activate(struct dir *d) {
    if (d->active) return;
    d->active = 1;
    d->prev_active = NULL;
    d->next_active = active;
    if (active) active->prev_active = d;
    active = d;
}

static void deactivate(struct dir *d) {
    if (!d->active) return;
    d->active = 0;
    if (d->prev_active) d->prev_active->next_active = d->next_active;
    else active = d->next_active;
    if (d->next_active) d->next_active->prev_active = d->prev_active;
}

static void drain(struct dir *d) {
    while (d->head) {
        struct frame *f = d->head;
        d->head = f->next;
        free(f);
    }
    d->tail = NULL;
    d->queued = 0;
    deactivate(d);
}

/* A frame arrived on d->in_fd at `now`: drop it, send it now, or queue it. */
static void arrive(struct dir *d, const unsigned char *p, uint32_t len, uint64_t now) {
    d->frames++;
    if (d->loss_ppm && rnd() % 1000000 < d->loss_ppm) {
        d->lost++;
        return;
    }
    uint64_t due = now;
    if (d->rate_bps) {
        uint64_t start = d->busy_until > now ? d->busy_until : now;
        d->busy_until = start + (uint64_t)len * 8ULL * 1000000000ULL / d->rate_bps;
        due = d->busy_until;
    }
    due += d->delay_ns;
    if (d->jitter_ns) {
        uint64_t span = 2 * d->jitter_ns + 1;
        int64_t off = (int64_t)(rnd() % span) - (int64_t)d->jitter_ns;
        due = (off < 0 && (uint64_t)(-off) > due - now) ? now : due + off;
    }
    if (due < d->last_due) due = d->last_due;
    d->last_due = due;
    if (due <= now && !d->head) {
        if (write(d->out_fd, p, len) < 0) d->overflow++;
        return;
    }
    if (d->queued >= d->limit) {
        d->overflow++;
        return;
    }
    struct frame *f = malloc(sizeof *f + len);
    if (!f) {
        d->overflow++;
        return;
    }
    f->next = NULL;
    f->due_ns = due;
    f->len = len;
    memcpy(f->data, p, len);
    if (d->tail) d->tail->next = f;
    else d->head = f;
    d->tail = f;
    d->queued++;
    activate(d);
}

static void read_all(struct dir *d) {
    for (int i = 0; i < BATCH; i++) {
        ssize_t n = read(d->in_fd, buf, sizeof buf);
        if (n <= 0) return;
        arrive(d, buf, (uint32_t)n, now_ns());
    }
}

/* Send every frame due; arm the timer at the next departure. */
static void depart(void) {
    uint64_t now = now_ns(), next = 0;
    for (struct dir *d = active, *nx; d; d = nx) {
        nx = d->next_active;
        while (d->head && d->head->due_ns <= now + 20000) { /* 20 µs early: one wake-up, not two */
            struct frame *f = d->head;
            d->head = f->next;
            if (write(d->out_fd, f->data, f->len) < 0) d->overflow++;
            free(f);
            d->queued--;
        }
        if (!d->head) {
            d->tail = NULL;
            deactivate(d);
        } else if (!next || d->head->due_ns < next) {
            next = d->head->due_ns;
        }
    }
    struct itimerspec its = {0};
    if (next) {
        its.it_value.tv_sec = (time_t)(next / 1000000000ULL);
        its.it_value.tv_nsec = (long)(next % 1000000000ULL);
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static int watch(int fd, uint64_t tag) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

#define TAG_CTL 1ULL
#define TAG_TIMER 2ULL
#define TAG_DIR(id, k) ((((uint64_t)(id) << 1) | (uint64_t)(k)) + 16ULL)

static void del_link(int id) {
    struct link *l = &links[id];
    if (!l->used) return;
    for (int k = 0; k < 2; k++) {
        drain(&l->d[k]);
        epoll_ctl(ep, EPOLL_CTL_DEL, l->d[k].in_fd, NULL);
    }
    close(l->d[0].in_fd);
    close(l->d[1].in_fd);
    memset(l, 0, sizeof *l);
}

/* Run one command; fds it keeps are taken out of *nfds. */
static int command(char *msg, int *fds, int *nfds, char *out, size_t outsz) {
    int id;
    char dirname[4];
    unsigned long long delay, jitter, loss, rate, limit;
    if (!strcmp(msg, "ping")) return snprintf(out, outsz, "ok");
    if (sscanf(msg, "add %d", &id) == 1) {
        if (id < 0 || id >= MAX_LINKS || links[id].used || *nfds != 2)
            return snprintf(out, outsz, "err add %d: bad id, in use, or not 2 fds (%d)", id, *nfds);
        *nfds = 0;
        struct link *l = &links[id];
        memset(l, 0, sizeof *l);
        l->used = 1;
        l->d[0].in_fd = fds[0], l->d[0].out_fd = fds[1];
        l->d[1].in_fd = fds[1], l->d[1].out_fd = fds[0];
        for (int k = 0; k < 2; k++) {
            l->d[k].limit = 100000;
            if (watch(l->d[k].in_fd, TAG_DIR(id, k)) < 0) {
                int e = errno;
                del_link(id);
                return snprintf(out, outsz, "err add %d: epoll: %s", id, strerror(e));
            }
        }
        return snprintf(out, outsz, "ok");
    }
    if (sscanf(msg, "set %d %3s %llu %llu %llu %llu %llu", &id, dirname, &delay, &jitter, &loss, &rate,
               &limit) == 7) {
        int k = !strcmp(dirname, "ab") ? 0 : !strcmp(dirname, "ba") ? 1 : -1;
        if (id < 0 || id >= MAX_LINKS || !links[id].used || k < 0 || loss > 1000000 || !limit)
            return snprintf(out, outsz, "err set: unknown link %d, direction %s, loss %llu or limit %llu", id,
                            dirname, loss, limit);
        struct dir *d = &links[id].d[k];
        d->delay_ns = delay * 1000ULL, d->jitter_ns = jitter * 1000ULL;
        d->loss_ppm = (uint32_t)loss, d->rate_bps = rate, d->limit = (uint32_t)limit;
        return snprintf(out, outsz, "ok");
    }
    if (sscanf(msg, "del %d", &id) == 1) {
        if (id < 0 || id >= MAX_LINKS || !links[id].used) return snprintf(out, outsz, "err del: unknown link %d", id);
        del_link(id);
        return snprintf(out, outsz, "ok");
    }
    if (!strcmp(msg, "stats")) {
        int n = snprintf(out, outsz, "ok\n");
        for (id = 0; id < MAX_LINKS && (size_t)n < outsz - 160; id++) {
            struct link *l = &links[id];
            if (!l->used) continue;
            n += snprintf(out + n, outsz - (size_t)n, "%d %llu %llu %llu %llu %llu %llu\n", id,
                          (unsigned long long)l->d[0].frames, (unsigned long long)l->d[0].lost,
                          (unsigned long long)l->d[0].overflow, (unsigned long long)l->d[1].frames,
                          (unsigned long long)l->d[1].lost, (unsigned long long)l->d[1].overflow);
        }
        return n;
    }
    return snprintf(out, outsz, "err unknown command: %.80s", msg);
}

static void control(void) {
    char msg[256], out[1 << 18];
    union {
        char b[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } cbuf;
    int c = accept4(ctl, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) return;
    struct timeval tv = {.tv_sec = 1}; /* the WAN waits while a client talks: not for long */
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
        struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg - 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
                            .msg_controllen = sizeof cbuf.b};
        ssize_t n = recvmsg(c, &mh, MSG_CMSG_CLOEXEC);
        if (n <= 0) break;
        msg[n] = 0;
        int fds[2], nfds = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                for (int i = 0; i < k; i++) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
                    if (nfds < 2) fds[nfds++] = fd;
                    else close(fd);
                }
            }
        }
        int len = command(msg, fds, &nfds, out, sizeof out);
        for (int i = 0; i < nfds; i++) close(fds[i]);
        if (send(c, out, (size_t)(len < (int)sizeof out ? len : (int)sizeof out - 1), MSG_NOSIGNAL) < 0) break;
    }
    close(c);
}

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CONTROL_SOCKET\n", argv[0]);
        return 2;
    }
    rng ^= (uint64_t)getpid() << 20 ^ now_ns();
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    ep = epoll_create1(EPOLL_CLOEXEC);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof sa.sun_path) {
        fprintf(stderr, "control socket path too long: %s\n", argv[1]);
        return 2;
    }
    strcpy(sa.sun_path, argv[1]);
    unlink(argv[1]);
    if (ep < 0 || tfd < 0 || ctl < 0 || bind(ctl, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ctl, 8) < 0) {
        perror("ww-linkemu: setup");
        return 1;
    }
    watch(tfd, TAG_TIMER);
    watch(ctl, TAG_CTL);
    fprintf(stderr, "ww-linkemu: listening on %s\n", argv[1]);
    struct epoll_event evs[128];
    while (!stop) {
        int n = epoll_wait(ep, evs, 128, -1);
        if (n < 0 && errno != EINTR) {
            perror("ww-linkemu: epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == TAG_CTL) {
                control();
            } else if (tag == TAG_TIMER) {
                uint64_t x;
                ssize_t r = read(tfd, &x, sizeof x);
                (void)r;
            } else {
                uint64_t v = tag - 16ULL;
                int id = (int)(v >> 1), k = (int)(v & 1);
                if (id < MAX_LINKS && links[id].used) read_all(&links[id].d[k]);
            }
        }
        depart();
    }
    unlink(argv[1]);
    return 0;
}
