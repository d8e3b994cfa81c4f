/*
 * race: a target with an egress lease trying every way it knows to reach
 * a TCP listener other than the broker's proxy (integration/egress_race_test.go).
 *
 * usage: race FORBIDDEN_PORT   (the proxy is the one HTTP_PROXY names)
 *
 * Each attempt prints one line:
 *   race4|race6 ok=N refused=N escaped=N other=N
 *       connects whose sockaddr two threads rewrite between the proxy's
 *       and the forbidden port while the call is in flight: ok are
 *       connects that ended at the proxy, escaped any that ended
 *       anywhere else (by getpeername), refused EACCES, other any
 *       other error;
 *   NAME errno ENAME | NAME done
 *       one attempt: sendto, sendmsg and sendmmsg with MSG_FASTOPEN,
 *       connect after TCP_FASTOPEN_CONNECT, a reconnect after
 *       AF_UNSPEC, and io_uring's connect (raw system calls).
 * The host checks its listener, not these lines.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ROUNDS 3000

static int proxy_port, forbidden_port;
static atomic_int stop;

static const char *ename(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOSYS: return "ENOSYS";
	case EINVAL: return "EINVAL";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EINPROGRESS: return "EINPROGRESS";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTCONN: return "ENOTCONN";
	case EISCONN: return "EISCONN";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	}
	static char buf[32];
	snprintf(buf, sizeof buf, "%d", e);
	return buf;
}

static void say(const char *name, int r)
{
	if (r < 0)
		printf("%s errno %s\n", name, ename(errno));
	else
		printf("%s done\n", name);
	fflush(stdout);
}

static struct sockaddr_in v4(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

static struct sockaddr_in6 v6(int port) /* ::ffff:127.0.0.1 */
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	sa.sin6_addr.s6_addr[10] = sa.sin6_addr.s6_addr[11] = 0xff;
	sa.sin6_addr.s6_addr[12] = 127;
	sa.sin6_addr.s6_addr[15] = 1;
	return sa;
}

/* The sockaddr under attack: its port flips while connect reads it. */
static union {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
} shared_sa;

static void *flipper(void *arg)
{
	volatile uint16_t *port = arg;
	uint16_t a = htons(proxy_port), b = htons(forbidden_port);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		*port = a;
		*port = b;
	}
	return NULL;
}

static int peer_port(int fd)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} peer;
	socklen_t len = sizeof peer;
	if (getpeername(fd, (struct sockaddr *)&peer, &len) < 0)
		return -1;
	return ntohs(peer.in.sin_family == AF_INET ? peer.in.sin_port : peer.in6.sin6_port);
}

/* connected waits for a non-blocking connect and says where it ended. */
static int connected(int fd, int r)
{
	if (r < 0 && errno == EINPROGRESS) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int err = 0;
		socklen_t len = sizeof err;
		poll(&p, 1, 10000);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			errno = err;
			return -1;
		}
		r = 0;
	}
	return r < 0 ? -1 : peer_port(fd);
}

static void race(const char *name, int family)
{
	socklen_t len;
	volatile uint16_t *port;
	if (family == AF_INET) {
		shared_sa.in = v4(proxy_port);
		len = sizeof shared_sa.in;
		port = &shared_sa.in.sin_port;
	} else {
		shared_sa.in6 = v6(proxy_port);
		len = sizeof shared_sa.in6;
		port = &shared_sa.in6.sin6_port;
	}
	pthread_t th[2];
	atomic_store(&stop, 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, flipper, (void *)port);
	int ok = 0, refused = 0, escaped = 0, other = 0;
	for (int i = 0; i < ROUNDS; i++) {
		int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | (i & 1 ? SOCK_NONBLOCK : 0), 0);
		if (fd < 0) {
			other++;
			continue;
		}
		int at = connected(fd, connect(fd, &shared_sa.sa, len));
		if (at == proxy_port)
			ok++;
		else if (at >= 0)
			escaped++;
		else if (errno == EACCES)
			refused++;
		else
			other++;
		close(fd);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("%s ok=%d refused=%d escaped=%d other=%d\n", name, ok, refused, escaped, other);
	fflush(stdout);
}

static void fastopen(void)
{
	struct sockaddr_in to = v4(forbidden_port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	say("fastopen_sendto", sendto(fd, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&to, sizeof to));
	close(fd);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct iovec iov = {.iov_base = "x", .iov_len = 1};
	struct msghdr msg = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov, .msg_iovlen = 1};
	say("fastopen_sendmsg", sendmsg(fd, &msg, MSG_FASTOPEN));
	close(fd);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct mmsghdr mm = {.msg_hdr = msg};
	say("fastopen_sendmmsg", sendmmsg(fd, &mm, 1, MSG_FASTOPEN));
	close(fd);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one);
	say("fastopen_connect", connect(fd, (struct sockaddr *)&to, sizeof to));
	close(fd);
}

/* reconnect: connected to the proxy, then AF_UNSPEC, then the forbidden port. */
static void reconnect(void)
{
	struct sockaddr_in proxy = v4(proxy_port), to = v4(forbidden_port);
	struct sockaddr unspec = {.sa_family = AF_UNSPEC};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	say("reconnect_proxy", connect(fd, (struct sockaddr *)&proxy, sizeof proxy));
	say("reconnect_unspec", connect(fd, &unspec, sizeof unspec));
	say("reconnect_forbidden", connect(fd, (struct sockaddr *)&to, sizeof to));
	close(fd);
}

/* uring: IORING_OP_CONNECT to the forbidden port, by raw system calls. */
static void uring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0) {
		say("io_uring_connect", -1);
		return;
	}
	size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
		say("io_uring_connect", -1);
		return;
	}
	struct sockaddr_in to = v4(forbidden_port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sqes[0], 0, sizeof sqes[0]);
	sqes[0].opcode = IORING_OP_CONNECT;
	sqes[0].fd = fd;
	sqes[0].addr = (unsigned long)&to;
	sqes[0].off = sizeof to;
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
	((unsigned *)(sq + p.sq_off.array))[*tail & *(unsigned *)(sq + p.sq_off.ring_mask)] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
		say("io_uring_connect", -1);
		return;
	}
	struct io_uring_cqe *cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes) +
				   (*(unsigned *)(cq + p.cq_off.head) & *(unsigned *)(cq + p.cq_off.ring_mask));
	errno = -cqe->res;
	say("io_uring_connect", cqe->res < 0 ? -1 : 0);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *proxy = getenv("HTTP_PROXY");
	const char *colon = proxy ? strrchr(proxy, ':') : NULL;
	if (argc != 2 || !colon) {
		fprintf(stderr, "usage: race FORBIDDEN_PORT, with HTTP_PROXY set\n");
		return 2;
	}
	proxy_port = atoi(colon + 1);
	forbidden_port = atoi(argv[1]);
	race("race4", AF_INET);
	race("race6", AF_INET6);
	fastopen();
	reconnect();
	uring();
	return 0;
}
