package clickhouse

import (
	"database/sql"
	"fmt"
	"math/big"

	"github.com/cockroachdb/apd/v3"
	"github.com/shopspring/decimal"
)

// The service computes with apd.Decimal; clickhouse-go binds and scans Decimal columns as
// shopspring decimal.Decimal. These helpers convert exactly between the two (through the
// integer coefficient and exponent, never through floats), at the adapter boundary only.
//
// Insert (batch.Append or conn.Exec arguments):
//
//	price, err := clickhouse.DecimalArg(&deal.Price, 18, 5) // column Decimal(18, 5)
//	batch.Append(deal.ID, price, ...)
//
// Scan (rows.Scan destinations):
//
//	var price apd.Decimal
//	rows.Scan(clickhouse.DecimalDest(&price)) // 1.10000 keeps its five places
//
// Binding an apd.Decimal directly does go through (apd's driver.Valuer yields a string),
// but the driver then truncates digits beyond the column's scale silently, and scanning into
// *apd.Decimal fails; use these helpers instead.

// DecimalArg converts d for a Decimal(precision, scale) column. It refuses NaN and
// infinities, a value that would need rounding to scale places, and a value with more than
// precision-scale integer digits, instead of letting the driver truncate.
func DecimalArg(d *apd.Decimal, precision, scale int32) (decimal.Decimal, error) {
	if d.Form != apd.Finite {
		return decimal.Decimal{}, fmt.Errorf("clickhouse: decimal %s is not finite", d)
	}
	var r apd.Decimal
	r.Reduce(d) // strip trailing zeros so that 1.1000000 fits scale 5
	if -r.Exponent > scale {
		return decimal.Decimal{}, fmt.Errorf("clickhouse: decimal %s has more than %d decimal places", d, scale)
	}
	coeff := r.Coeff.MathBigInt()
	// Rescaled to the column's scale, the coefficient is what ClickHouse stores; it may
	// hold at most precision digits.
	stored := new(big.Int).Mul(coeff, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(r.Exponent+scale)), nil))
	if len(stored.String()) > int(precision) {
		return decimal.Decimal{}, fmt.Errorf("clickhouse: decimal %s does not fit Decimal(%d, %d)", d, precision, scale)
	}
	if r.Negative {
		coeff.Neg(coeff)
	}
	return decimal.NewFromBigInt(coeff, r.Exponent), nil
}

// DecimalFromDriver converts a scanned driver decimal to apd, keeping its exponent (a
// Decimal(18, 5) value comes back with five places).
func DecimalFromDriver(v decimal.Decimal) apd.Decimal {
	var coeff apd.BigInt
	coeff.SetMathBigInt(v.Coefficient())
	return *apd.NewWithBigInt(&coeff, v.Exponent())
}

// DecimalDest returns a scan destination that stores a Decimal column into dst.
func DecimalDest(dst *apd.Decimal) sql.Scanner { return decimalDest{dst} }

type decimalDest struct{ dst *apd.Decimal }

func (s decimalDest) Scan(src any) error {
	switch v := src.(type) {
	case decimal.Decimal:
		*s.dst = DecimalFromDriver(v)
	case *decimal.Decimal:
		*s.dst = DecimalFromDriver(*v)
	case string:
		if _, _, err := s.dst.SetString(v); err != nil {
			return fmt.Errorf("clickhouse: scan decimal %q: %w", v, err)
		}
	default:
		return fmt.Errorf("clickhouse: cannot scan %T into a decimal", src)
	}
	return nil
}
