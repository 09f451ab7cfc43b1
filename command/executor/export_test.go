package executor

// ExpiredQuery and its arguments, for the test of its plan.
var (
	ExpiredQuery = expiredQuery
	SentTypes    = sentTypes
	SentKinds    = sentKinds
)
