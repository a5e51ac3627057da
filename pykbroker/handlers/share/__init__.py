"""Share-group APIs (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge and the
share-group offsets admin APIs. Served at Kafka 4.2's versions; refused with UNSUPPORTED_VERSION while share
groups are off (share.version 0 and group.share.enable false), as Kafka does (it advertises them anyway)."""
