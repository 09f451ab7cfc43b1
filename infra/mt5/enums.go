package mt5

// MarginCalc is the subset of SYMBOL_CALC_MODE_* the simulator models.
type MarginCalc int

// Margin calculation modes: Forex margin = lots*contract/leverage in the margin currency;
// CFDLeverage margin = lots*contract*price/leverage in the margin currency.
const (
	CalcForex       MarginCalc = 0
	CalcCFDLeverage MarginCalc = 4
)
