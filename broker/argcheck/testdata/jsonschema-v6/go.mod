module github.com/iota-uz/repl-mcp/broker/argcheck/testdata/jsonschema-v6

go 1.26

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.14.0 // indirect
