module github.com/weft-sh/weft

go 1.26.8

require (
	github.com/gorilla/mux v1.8.1
	github.com/hashicorp/go-memdb v1.3.5
	go.etcd.io/bbolt v1.5.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/golang-lru v0.5.4 // indirect
	golang.org/x/sync v0.21.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
)

tool google.golang.org/protobuf/cmd/protoc-gen-go
