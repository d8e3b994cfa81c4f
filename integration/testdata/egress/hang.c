// hang: a blocking connect to the egress proxy whose handshake never
// completes. The socket carries a TCP_MD5SIG key for the proxy's address,
// so the proxy's listener (which has none) drops every SYN, and
// TCP_SYNCNT=127 makes the kernel send them for hours. A thread makes the
// connect and prints its result; the main thread waits for it at most
// 20 seconds, then exits whatever it became.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;

static void *hang(void *arg) {
	(void)arg;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int n = 127;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	struct tcp_md5sig m;
	memset(&m, 0, sizeof m);
	memcpy(&m.tcpm_addr, &a, sizeof a);
	m.tcpm_keylen = 4;
	memcpy(m.tcpm_key, "abcd", 4);
	if (setsockopt(s, IPPROTO_TCP, TCP_SYNCNT, &n, sizeof n) != 0 || setsockopt(s, IPPROTO_TCP, TCP_MD5SIG, &m, sizeof m) != 0) {
		printf("hang_setsockopt errno %s\n", strerrorname_np(errno));
		fflush(stdout);
		return 0;
	}
	int r = connect(s, (struct sockaddr *)&a, sizeof a);
	printf("hang_connect %s\n", r == 0 ? "ok" : strerrorname_np(errno));
	fflush(stdout);
	return 0;
}

int main(void) {
	const char *p = getenv("HTTP_PROXY");
	if (!p || !strrchr(p, ':')) {
		printf("no HTTP_PROXY\n");
		return 1;
	}
	port = atoi(strrchr(p, ':') + 1);
	pthread_t t;
	pthread_create(&t, 0, hang, 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	if (pthread_timedjoin_np(t, 0, &until) != 0) {
		printf("hang_connect still waiting\n");
		fflush(stdout);
	}
	_exit(0);
}
