#include "analyzer/net/nethost.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "common/timeutil.h"

static void refresh_addrs(struct nethost *h)
{
	struct ifaddrs *ifa, *i;

	h->naddrs = 0;
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i && h->naddrs < NETHOST_MAX_ADDRS; i = i->ifa_next) {
		struct net_endpoint *ep = &h->addrs[h->naddrs];

		if (!i->ifa_addr)
			continue;
		memset(ep, 0, sizeof(*ep));
		if (i->ifa_addr->sa_family == AF_INET) {
			ep->family = AF_INET;
			memcpy(ep->addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			ep->family = AF_INET6;
			memcpy(ep->addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		h->naddrs++;
	}
	freeifaddrs(ifa);
}

void nethost__refresh(struct nethost *h)
{
	h->mono_to_unix = (int64_t)timeutil__now_ns(CLOCK_REALTIME) - (int64_t)timeutil__now_ns(CLOCK_MONOTONIC);
	refresh_addrs(h);
}

uint64_t nethost__to_unix(const struct nethost *h, uint64_t mono_ns)
{
	return mono_ns + (uint64_t)h->mono_to_unix;
}

bool nethost__is_local(const struct nethost *h, const struct net_endpoint *ep)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (net_endpoint__is_loopback(ep))
		return true;
	for (unsigned i = 0; i < h->naddrs; i++) {
		const struct net_endpoint *l = &h->addrs[i];

		if (l->family == ep->family && !memcmp(l->addr, ep->addr, 16))
			return true;
		if (l->family == AF_INET && ep->family == AF_INET6 && !memcmp(ep->addr, v4mapped, 12) &&
		    !memcmp(ep->addr + 12, l->addr, 4))
			return true;
	}
	return false;
}
