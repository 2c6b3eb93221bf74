package tools

import (
	"crypto/tls"
	"net/http"
	"time"
)

var client = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}},
}

func Lookup(orderID string) (*http.Response, error) {
	return client.Get("https://api.shop.example.com/v1/orders/" + orderID)
}
