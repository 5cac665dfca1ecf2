// Package yarnpb holds Weft's Go code for Hadoop's hadoop.yarn protos:
// records, the client, AM and NM protocols, and token identifiers.
package yarnpb

// Coexist with other Go copies of Hadoop's protos; see regconflict.
import _ "github.com/weft-sh/weft/protos/internal/regconflict"
