// Package content is the part of the ignition room that every node links: the Ignition
// config a rendered config stands for (Ignition), the name its content gives it (Name,
// Check), and the first-boot record the boot server adds to a pool's served config
// (FirstBoot). It imports nothing but the model and the standard library, and none of
// Ignition's parsers: validating, serving and reading configs back is the ignition
// package's.
package content
