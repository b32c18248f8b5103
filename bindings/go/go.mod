module mnem

go 1.23
