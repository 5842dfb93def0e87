//go:build tools

// Package etcdtools pins etcd for the acceptance tests.
package etcdtools

import _ "go.etcd.io/etcd/server/v3"
