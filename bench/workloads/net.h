/* TCP on 127.0.0.1, as the servers and their load generators use it. */
#ifndef BUFSEL_BENCH_NET_H
#define BUFSEL_BENCH_NET_H

/* A listening socket on an ephemeral port of 127.0.0.1 (close-on-exec); *port gets the port. */
int net_listen(int backlog, unsigned *port);

/* A connected socket to 127.0.0.1:port with TCP_NODELAY, blocking, close-on-exec. */
int net_connect(unsigned port);

/* TCP_NODELAY: an echo of a message cut into two receives must not wait for an ACK. */
void net_nodelay(int fd);

#endif
