// Package views renders plans and apply progress for people (text, tables) and for tools
// (JSON in the shape of Terraform's plan and machine-readable UI). Views decide nothing;
// they show what the planner and the engine produced.
package views
