// Package argcheck checks the arguments of a downstream tool call against the
// tool's inputSchema before the broker sends anything: within fixed byte, depth,
// node, composition, pattern and step budgets (docs/contract.md §8.6, §13.1), with a bounded
// cache of resolved schemas (a [Schema] made once per tool keeps the key it is
// cached under) and a bounded number of concurrent checks. Validation is
// jsonschema-go's. Its errors name where and which rule, never an argument value. It does not fetch the
// schema (the broker's catalogue holds it), know which tool a schema belongs to,
// or decide what a rejection means for the call; it starts no goroutine and holds
// nothing that needs stopping: a [Validator] made by [New] is dropped when unused.
// One Validator is shared by every broker of a server.
//
// Its budgets and messages are docs/contract.md §8.6 and §13.1.
package argcheck
