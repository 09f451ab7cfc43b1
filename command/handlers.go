package command

// Handlers are every command handler of the service (the Commands half of the application).
type Handlers struct{}
