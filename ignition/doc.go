// Package ignition is mcp's one room for Ignition configs. It alone imports Ignition's
// config/v3_* packages (internal/layering keeps it so): every other package asks it for
//
//   - the specs mcp knows, each with Ignition's own parser (Spec, Lookup, All), and a
//     parse of any of them into the newest spec's types (ParseAny);
//   - render's check of a merged config with its spec's parser, which names it (Render),
//     its report in the model's neutral form; Renderer hands that, the spec check and the
//     first-boot merge to the planner, which imports no Ignition parser;
//     the config's Ignition encoding, its name and the first-boot record are the room's
//     part every node links, ignition/content, which imports no parser;
//   - pointer configs: the user-data that makes a booting node fetch and merge its pool's
//     config from the boot server (Pointer);
//   - served configs: a pool's rendered config with the first-boot record (and, asked,
//     the first-boot unit) added, in every spec that can express it, with the reason for
//     each that cannot (Serve) — what the boot server prepares and answers /config/<pool>
//     with;
//   - reading a config back: what Ignition's files and kargs stages do with a served
//     config, its resources decoded and verified (Read) — the local fleet's first boot
//     writes that to a node's root through the node executor's writer.
//
// It does no I/O.
package ignition
