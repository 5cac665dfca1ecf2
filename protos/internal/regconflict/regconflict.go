// Package regconflict lets Weft's Hadoop protos share a binary with other
// Go copies of the same Hadoop protos — github.com/colinmarc/hdfs/v2
// embeds its own hadoop.common and hadoop.hdfs messages — without the
// protobuf registry panicking at start-up over the duplicate full names.
//
// Weft's protos keep Hadoop's proto package names because the spec asks
// for them; the wire format does not depend on them. Nothing in Weft
// resolves Hadoop messages through the global registry (no Any, no
// protojson by name): each copy marshals through its own Go types, so
// which copy the registry keeps does not matter.
//
// The protobuf runtime reads GOLANG_PROTOBUF_REGISTRATION_CONFLICT when a
// conflict happens. Weft's proto packages import this package, so its init
// runs before they register and so before any conflict they are part of,
// whichever copy registers first. A value already set by the user is kept.
package regconflict

import "os"

const env = "GOLANG_PROTOBUF_REGISTRATION_CONFLICT"

func init() {
	if _, set := os.LookupEnv(env); !set {
		os.Setenv(env, "ignore")
	}
}
