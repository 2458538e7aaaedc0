// Command etcd is etcd's own server entry point, built as a module of its
// own so that its dependencies never meet silt's: tests run it as a real
// etcd process (see package etcdtest and `make etcd`).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
