#include "bench/workloads/net.h"
#include "bench/workloads/bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

int net_listen(int backlog, unsigned *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die_err(errno, "socket");
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die_err(errno, "bind 127.0.0.1");
	if (listen(fd, backlog) < 0)
		die_err(errno, "listen");
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		die_err(errno, "getsockname");
	*port = ntohs(sa.sin_port);
	return fd;
}

int net_connect(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die_err(errno, "socket");
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die_err(errno, "connect to 127.0.0.1:%u", port);
	net_nodelay(fd);
	return fd;
}

void net_nodelay(int fd)
{
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		die_err(errno, "setsockopt TCP_NODELAY on fd %d", fd);
}
