// Package demo generates deterministic demo data for cdnapi: points of
// presence, files and cached assets that look like what a real CDN holds.
//
// The same seed and reference time always give the same records, so a
// demo database, a benchmark or a failing test can be rebuilt exactly.
// Nothing here touches storage except Seed, which writes through a
// cdnapi.Writer, the writer of a store transaction.
package demo

import "github.com/cdnapi/cdnapi"

// pop is a point of presence with its share of the traffic.
type pop struct {
	region cdnapi.Region
	weight int // relative share of asset requests; big PoPs serve more
}

// pops are real CDN locations, coded the way many CDNs code them: the IATA
// code of the nearest big airport and a site number. Zones follow the
// cloud-provider naming that operators know (eu-central, ap-northeast).
var pops = []pop{
	{cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE"}, 10},
	{cdnapi.Region{Code: "AMS1", Name: "Amsterdam", Zone: "eu-west", Country: "NL"}, 8},
	{cdnapi.Region{Code: "LHR1", Name: "London", Zone: "eu-west", Country: "GB"}, 10},
	{cdnapi.Region{Code: "CDG1", Name: "Paris", Zone: "eu-west", Country: "FR"}, 7},
	{cdnapi.Region{Code: "WAW1", Name: "Warsaw", Zone: "eu-central", Country: "PL"}, 3},
	{cdnapi.Region{Code: "MAD1", Name: "Madrid", Zone: "eu-south", Country: "ES"}, 4},
	{cdnapi.Region{Code: "MXP1", Name: "Milan", Zone: "eu-south", Country: "IT"}, 3},
	{cdnapi.Region{Code: "ARN1", Name: "Stockholm", Zone: "eu-north", Country: "SE"}, 3},
	{cdnapi.Region{Code: "IAD1", Name: "Ashburn", Zone: "us-east", Country: "US"}, 12},
	{cdnapi.Region{Code: "ORD1", Name: "Chicago", Zone: "us-central", Country: "US"}, 6},
	{cdnapi.Region{Code: "DFW1", Name: "Dallas", Zone: "us-central", Country: "US"}, 5},
	{cdnapi.Region{Code: "SJC1", Name: "San Jose", Zone: "us-west", Country: "US"}, 8},
	{cdnapi.Region{Code: "LAX1", Name: "Los Angeles", Zone: "us-west", Country: "US"}, 7},
	{cdnapi.Region{Code: "YYZ1", Name: "Toronto", Zone: "ca-central", Country: "CA"}, 4},
	{cdnapi.Region{Code: "GRU1", Name: "São Paulo", Zone: "sa-east", Country: "BR"}, 5},
	{cdnapi.Region{Code: "SCL1", Name: "Santiago", Zone: "sa-west", Country: "CL"}, 2},
	{cdnapi.Region{Code: "NRT1", Name: "Tokyo", Zone: "ap-northeast", Country: "JP"}, 8},
	{cdnapi.Region{Code: "ICN1", Name: "Seoul", Zone: "ap-northeast", Country: "KR"}, 4},
	{cdnapi.Region{Code: "HKG1", Name: "Hong Kong", Zone: "ap-east", Country: "HK"}, 4},
	{cdnapi.Region{Code: "SIN1", Name: "Singapore", Zone: "ap-southeast", Country: "SG"}, 7},
	{cdnapi.Region{Code: "SYD1", Name: "Sydney", Zone: "ap-southeast", Country: "AU"}, 4},
	{cdnapi.Region{Code: "BOM1", Name: "Mumbai", Zone: "ap-south", Country: "IN"}, 5},
	{cdnapi.Region{Code: "DXB1", Name: "Dubai", Zone: "me-central", Country: "AE"}, 2},
	{cdnapi.Region{Code: "JNB1", Name: "Johannesburg", Zone: "af-south", Country: "ZA"}, 2},
}

// Regions returns the demo points of presence, ordered as listed above,
// every one operational (the only region status the spec shows). The slice
// is a fresh copy that the caller may keep or change.
func Regions() []cdnapi.Region {
	rs := make([]cdnapi.Region, len(pops))
	for i, p := range pops {
		rs[i] = p.region
		rs[i].Status = cdnapi.StatusOperational
	}
	return rs
}
