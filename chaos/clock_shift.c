/*
 * clock_shift: an LD_PRELOAD library that shifts the wall clock of one process, for the chaos campaign's
 * clock-jump nemesis (chaos/clock.py builds it with the system C compiler and sets it per broker).
 *
 * CLOCK_REALTIME (and its _COARSE variant, gettimeofday, time) answer real time plus a shift in
 * milliseconds, a signed integer read as text from the file named by CHAOS_CLOCK_SHIFT_FILE. The file is
 * read again at most every 50 ms (of the real monotonic clock), so writing it jumps the process' clock
 * forwards or backwards while it runs. The monotonic clocks are left alone: a real clock step (NTP, an
 * operator, a VM restored) moves only the wall clock, and sleeps and timers keep their real lengths.
 *
 * Why not libfaketime: Debian bookworm's 0.9.10 turns Python's time.sleep (clock_nanosleep on
 * CLOCK_MONOTONIC, TIMER_ABSTIME) into EINVAL once FAKETIME_DONT_FAKE_MONOTONIC is set (it shifts the
 * monotonic deadline by the wall clock's offset), and without that setting threading's timed waits hang.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define RECHECK_NS 50000000LL

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static const char *shift_file;
static _Atomic long long shift_ns;
static _Atomic long long next_read_ns;

__attribute__((constructor)) static void clock_shift_init(void) {
    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    shift_file = getenv("CHAOS_CLOCK_SHIFT_FILE");
}

static long long current_shift(void) {
    struct timespec mono;
    long long now;
    char buf[32];
    ssize_t n;
    int fd;

    if (shift_file == NULL || real_clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
        return 0;
    now = (long long)mono.tv_sec * 1000000000LL + mono.tv_nsec;
    if (now < atomic_load(&next_read_ns))
        return atomic_load(&shift_ns);
    atomic_store(&next_read_ns, now + RECHECK_NS);
    fd = open(shift_file, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            atomic_store(&shift_ns, strtoll(buf, NULL, 10) * 1000000LL);
        }
    }
    return atomic_load(&shift_ns);
}

int clock_gettime(clockid_t clock_id, struct timespec *tp) {
    long long ns;
    int result;

    if (real_clock_gettime == NULL)
        clock_shift_init();
    result = real_clock_gettime(clock_id, tp);
    if (result == 0 && (clock_id == CLOCK_REALTIME || clock_id == CLOCK_REALTIME_COARSE)) {
        ns = (long long)tp->tv_sec * 1000000000LL + tp->tv_nsec + current_shift();
        tp->tv_sec = (time_t)(ns / 1000000000LL);
        tp->tv_nsec = (long)(ns % 1000000000LL);
        if (tp->tv_nsec < 0) {
            tp->tv_sec -= 1;
            tp->tv_nsec += 1000000000L;
        }
    }
    return result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;

    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *tloc) {
    struct timespec ts;

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (tloc != NULL)
        *tloc = ts.tv_sec;
    return ts.tv_sec;
}
