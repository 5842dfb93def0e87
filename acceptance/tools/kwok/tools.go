//go:build tools

// Package kwoktools pins kwok for the acceptance tests.
package kwoktools

import _ "sigs.k8s.io/kwok/cmd/kwok"
