// Command etcd is etcd's server built from its published Go module at the
// version pinned in go.mod, so the local control plane needs no downloaded binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
