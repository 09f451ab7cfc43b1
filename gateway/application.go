package gateway

import (
	"tradesvc/command"
	"tradesvc/query"
)

// Application is what the gateway serves: the command handlers (the write side) and the
// query handlers (the read side), built once by the composition root (cmd/tradesvc/app).
// The gateway only maps routes to them: a route file names the handler it calls, and the
// handler's file in command/ or query/ is where the use case lives.
type Application struct {
	Commands command.Handlers
	Queries  query.Handlers
}
