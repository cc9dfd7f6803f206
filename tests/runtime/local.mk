# runtime
