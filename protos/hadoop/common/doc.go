// Package commonpb holds Weft's Go code for Hadoop's hadoop.common protos:
// IPC headers, connection context and security tokens.
package commonpb

// Coexist with other Go copies of Hadoop's protos; see regconflict.
import _ "github.com/weft-sh/weft/protos/internal/regconflict"
