package registry

// BatchRounds exposes batchRounds to the tests.
var BatchRounds = batchRounds
