/*
 * Where TLS plaintext without a socket goes.  A TLS library with memory
 * BIOs (Node's) reports plaintext with no socket: it belongs to the socket
 * its library object used before, else to the last socket the same thread
 * moved data on (such libraries encrypt and decrypt on the thread that does
 * the socket I/O, right before or after it).  netprof tells this table
 * both and asks it for the socket.
 *
 * Direct-mapped tables of fixed size: a collision forgets an older binding,
 * and the thread's next I/O binds again.  Not thread-safe.
 */
#ifndef EMBER_ANALYZER_NET_TLSBIND_H
#define EMBER_ANALYZER_NET_TLSBIND_H

#include <stdint.h>

struct tlsbind;

/* NULL + errno. */
struct tlsbind *tlsbind__new(void);
/* Library object obj of process tgid moved plaintext over socket inode ino. */
void tlsbind__object(struct tlsbind *b, uint32_t tgid, uint64_t obj, uint64_t ino);
/* Thread tid of process tgid moved data over socket inode ino. */
void tlsbind__thread(struct tlsbind *b, uint32_t tgid, uint32_t tid, uint64_t ino);
/* The socket inode of plaintext from object obj on thread tid: the object's, else the thread's last; 0: none. */
uint64_t tlsbind__socket(const struct tlsbind *b, uint32_t tgid, uint32_t tid, uint64_t obj);
/* Accepts NULL.  Returns NULL. */
struct tlsbind *tlsbind__free(struct tlsbind *b);

#endif
