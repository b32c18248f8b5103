module github.com/mnem-memory/mnem-go

go 1.23
