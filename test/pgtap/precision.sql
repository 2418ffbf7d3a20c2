-- Precision of individual_risk, weighted_risk_summary and the Poisson
-- birthday functions far from the usual ranges (f = 1 with F up to 1e300,
-- weights of 1e17 and 1e300, N down to 1e-308), against references computed
-- outside qidrisk: test/reference/precision.py evaluates each defining
-- formula with mpmath at 60 digits (the individual-risk integral through
-- mpmath's 2F1, checked against numerical quadrature), and its output is
-- pasted below.  Also: quantile_sample_size's out-of-range error.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(13);

-- individual_risk(f, F, method): relative error at most 1e-12 (231 cases)
CREATE TEMP TABLE risk_ref (f bigint, big_f float8, method text, ref float8);
INSERT INTO risk_ref VALUES
(3, 4::float8, 'approx', 0.27272727272727271::float8),
(3, 10::float8, 'approx', 0.13043478260869565::float8),
(3, 100::float8, 'approx', 0.014778325123152709::float8),
(3, 1000::float8, 'approx', 0.0014977533699450823::float8),
(3, 1000000::float8, 'approx', 1.4999977500033749e-06::float8),
(3, 1000000000::float8, 'approx', 1.4999999977500001e-09::float8),
(3, 1000000000000::float8, 'approx', 1.49999999999775e-12::float8),
(3, 4000000000000000::float8, 'approx', 3.7499999999999988e-16::float8),
(3, 10000000000000000::float8, 'approx', 1.4999999999999997e-16::float8),
(3, 1e+17::float8, 'approx', 1.5e-17::float8),
(3, 1e+20::float8, 'approx', 1.5000000000000001e-20::float8),
(3, 1e+30::float8, 'approx', 1.4999999999999999e-30::float8),
(3, 1.0000000000000001e+50::float8, 'approx', 1.5e-50::float8),
(3, 1e+100::float8, 'approx', 1.5e-100::float8),
(3, 9.9999999999999997e+199::float8, 'approx', 1.5e-200::float8),
(3, 1.0000000000000001e+300::float8, 'approx', 1.4999999999999998e-300::float8),
(5, 10::float8, 'approx', 0.1111111111111111::float8),
(5, 100::float8, 'approx', 0.012345679012345678::float8),
(5, 1000::float8, 'approx', 0.0012484394506866417::float8),
(5, 1000000::float8, 'approx', 1.249998437501953e-06::float8),
(5, 1000000000::float8, 'approx', 1.2499999984375001e-09::float8),
(5, 1000000000000::float8, 'approx', 1.2499999999984374e-12::float8),
(5, 4000000000000000::float8, 'approx', 3.124999999999999e-16::float8),
(5, 10000000000000000::float8, 'approx', 1.2499999999999999e-16::float8),
(5, 1e+17::float8, 'approx', 1.25e-17::float8),
(5, 1e+20::float8, 'approx', 1.25e-20::float8),
(5, 1e+30::float8, 'approx', 1.2499999999999999e-30::float8),
(5, 1.0000000000000001e+50::float8, 'approx', 1.2499999999999999e-50::float8),
(5, 1e+100::float8, 'approx', 1.25e-100::float8),
(5, 9.9999999999999997e+199::float8, 'approx', 1.25e-200::float8),
(5, 1.0000000000000001e+300::float8, 'approx', 1.25e-300::float8),
(10, 100::float8, 'approx', 0.01098901098901099::float8),
(10, 1000::float8, 'approx', 0.0011098779134295228::float8),
(10, 1000000::float8, 'approx', 1.1111098765445817e-06::float8),
(10, 1000000000::float8, 'approx', 1.1111111098765432e-09::float8),
(10, 1000000000000::float8, 'approx', 1.1111111111098765e-12::float8),
(10, 4000000000000000::float8, 'approx', 2.777777777777777e-16::float8),
(10, 10000000000000000::float8, 'approx', 1.111111111111111e-16::float8),
(10, 1e+17::float8, 'approx', 1.1111111111111111e-17::float8),
(10, 1e+20::float8, 'approx', 1.1111111111111111e-20::float8),
(10, 1e+30::float8, 'approx', 1.1111111111111111e-30::float8),
(10, 1.0000000000000001e+50::float8, 'approx', 1.111111111111111e-50::float8),
(10, 1e+100::float8, 'approx', 1.1111111111111111e-100::float8),
(10, 9.9999999999999997e+199::float8, 'approx', 1.1111111111111112e-200::float8),
(10, 1.0000000000000001e+300::float8, 'approx', 1.111111111111111e-300::float8),
(63, 100::float8, 'approx', 0.01005907711959125::float8),
(63, 1000::float8, 'approx', 0.0010150975621545848::float8),
(63, 1000000::float8, 'approx', 1.0161279997409035e-06::float8),
(63, 1000000000::float8, 'approx', 1.0161290312255464e-09::float8),
(63, 1000000000000::float8, 'approx', 1.0161290322570321e-12::float8),
(63, 4000000000000000::float8, 'approx', 2.5403225806451606e-16::float8),
(63, 10000000000000000::float8, 'approx', 1.0161290322580644e-16::float8),
(63, 1e+17::float8, 'approx', 1.0161290322580646e-17::float8),
(63, 1e+20::float8, 'approx', 1.0161290322580645e-20::float8),
(63, 1e+30::float8, 'approx', 1.0161290322580645e-30::float8),
(63, 1.0000000000000001e+50::float8, 'approx', 1.0161290322580644e-50::float8),
(63, 1e+100::float8, 'approx', 1.0161290322580645e-100::float8),
(63, 9.9999999999999997e+199::float8, 'approx', 1.0161290322580645e-200::float8),
(63, 1.0000000000000001e+300::float8, 'approx', 1.0161290322580645e-300::float8),
(64, 100::float8, 'approx', 0.01005656819610308::float8),
(64, 1000::float8, 'approx', 0.0010148420652036027::float8),
(64, 1000000::float8, 'approx', 1.0158719838760798e-06::float8),
(64, 1000000000::float8, 'approx', 1.015873014841018e-09::float8),
(64, 1000000000000::float8, 'approx', 1.0158730158719839e-12::float8),
(64, 4000000000000000::float8, 'approx', 2.5396825396825388e-16::float8),
(64, 10000000000000000::float8, 'approx', 1.0158730158730157e-16::float8),
(64, 1e+17::float8, 'approx', 1.0158730158730159e-17::float8),
(64, 1e+20::float8, 'approx', 1.0158730158730159e-20::float8),
(64, 1e+30::float8, 'approx', 1.0158730158730158e-30::float8),
(64, 1.0000000000000001e+50::float8, 'approx', 1.0158730158730158e-50::float8),
(64, 1e+100::float8, 'approx', 1.0158730158730159e-100::float8),
(64, 9.9999999999999997e+199::float8, 'approx', 1.015873015873016e-200::float8),
(64, 1.0000000000000001e+300::float8, 'approx', 1.0158730158730159e-300::float8),
(100, 1000::float8, 'approx', 0.0010090817356205853::float8),
(100, 1000000::float8, 'approx', 1.0100999897979901e-06::float8),
(100, 1000000000::float8, 'approx', 1.010101009080706e-09::float8),
(100, 1000000000000::float8, 'approx', 1.0101010100999899e-12::float8),
(100, 4000000000000000::float8, 'approx', 2.5252525252525247e-16::float8),
(100, 10000000000000000::float8, 'approx', 1.01010101010101e-16::float8),
(100, 1e+17::float8, 'approx', 1.0101010101010102e-17::float8),
(100, 1e+20::float8, 'approx', 1.0101010101010102e-20::float8),
(100, 1e+30::float8, 'approx', 1.01010101010101e-30::float8),
(100, 1.0000000000000001e+50::float8, 'approx', 1.0101010101010101e-50::float8),
(100, 1e+100::float8, 'approx', 1.01010101010101e-100::float8),
(100, 9.9999999999999997e+199::float8, 'approx', 1.0101010101010102e-200::float8),
(100, 1.0000000000000001e+300::float8, 'approx', 1.0101010101010101e-300::float8),
(1000, 1000000::float8, 'approx', 1.000999998999e-06::float8),
(1000, 1000000000::float8, 'approx', 1.0010009999989979e-09::float8),
(1000, 1000000000000::float8, 'approx', 1.001001000999999e-12::float8),
(1000, 4000000000000000::float8, 'approx', 2.5025025025025018e-16::float8),
(1000, 10000000000000000::float8, 'approx', 1.0010010010010009e-16::float8),
(1000, 1e+17::float8, 'approx', 1.001001001001001e-17::float8),
(1000, 1e+20::float8, 'approx', 1.0010010010010011e-20::float8),
(1000, 1e+30::float8, 'approx', 1.0010010010010011e-30::float8),
(1000, 1.0000000000000001e+50::float8, 'approx', 1.0010010010010009e-50::float8),
(1000, 1e+100::float8, 'approx', 1.0010010010010009e-100::float8),
(1000, 9.9999999999999997e+199::float8, 'approx', 1.001001001001001e-200::float8),
(1000, 1.0000000000000001e+300::float8, 'approx', 1.0010010010010009e-300::float8),
(1, 1.5::float8, 'exact', 0.81093021621632877::float8),
(1, 2.5::float8, 'exact', 0.61086048791610337::float8),
(1, 4::float8, 'exact', 0.46209812037329689::float8),
(1, 10::float8, 'exact', 0.25584278811044953::float8),
(1, 100::float8, 'exact', 0.046516870565536279::float8),
(1, 1000::float8, 'exact', 0.0069146699489310683::float8),
(1, 1000000::float8, 'exact', 1.3815524373488647e-05::float8),
(1, 1000000000::float8, 'exact', 2.0723265857669677e-08::float8),
(1, 1000000000000::float8, 'exact', 2.7631021115956179e-11::float8),
(1, 4000000000000000::float8, 'exact', 8.9812676890076466e-15::float8),
(1, 10000000000000000::float8, 'exact', 3.6841361487904733e-15::float8),
(1, 1e+17::float8, 'exact', 3.9143946580898776e-16::float8),
(1, 1e+20::float8, 'exact', 4.6051701859880914e-19::float8),
(1, 1e+30::float8, 'exact', 6.9077552789821367e-29::float8),
(1, 1.0000000000000001e+50::float8, 'exact', 1.1512925464970228e-48::float8),
(1, 1e+100::float8, 'exact', 2.3025850929940455e-98::float8),
(1, 9.9999999999999997e+199::float8, 'exact', 4.6051701859880914e-198::float8),
(1, 1.0000000000000001e+300::float8, 'exact', 6.9077552789821367e-298::float8),
(2, 2.5::float8, 'exact', 0.42970317897264393::float8),
(2, 4::float8, 'exact', 0.30685281944005471::float8),
(2, 10::float8, 'exact', 0.14941013047286872::float8),
(2, 100::float8, 'exact', 0.018778832567501812::float8),
(2, 1000::float8, 'exact', 0.0019790498508101485::float8),
(2, 1000000::float8, 'exact', 1.9999515103445319e-06::float8),
(2, 1000000000::float8, 'exact', 1.9999999238795252e-09::float8),
(2, 1000000000000::float8, 'exact', 1.9999999998962486e-12::float8),
(2, 4000000000000000::float8, 'exact', 4.9999999999999146e-16::float8),
(2, 10000000000000000::float8, 'exact', 1.9999999999999859e-16::float8),
(2, 1e+17::float8, 'exact', 1.9999999999999986e-17::float8),
(2, 1e+20::float8, 'exact', 1.9999999999999999e-20::float8),
(2, 1e+30::float8, 'exact', 1.9999999999999998e-30::float8),
(2, 1.0000000000000001e+50::float8, 'exact', 1.9999999999999998e-50::float8),
(2, 1e+100::float8, 'exact', 2e-100::float8),
(2, 9.9999999999999997e+199::float8, 'exact', 2e-200::float8),
(2, 1.0000000000000001e+300::float8, 'exact', 2.0000000000000001e-300::float8),
(3, 4::float8, 'exact', 0.26741595619808506::float8),
(3, 10::float8, 'exact', 0.12538561433469467::float8),
(3, 100::float8, 'exact', 0.014611122563314177::float8),
(3, 1000::float8, 'exact', 0.001495617563640963::float8),
(3, 1000000::float8, 'exact', 1.4999955003028592e-06::float8),
(3, 1000000000::float8, 'exact', 1.4999999955000006e-09::float8),
(3, 1000000000000::float8, 'exact', 1.4999999999955001e-12::float8),
(3, 4000000000000000::float8, 'exact', 3.7499999999999973e-16::float8),
(3, 10000000000000000::float8, 'exact', 1.4999999999999995e-16::float8),
(3, 1e+17::float8, 'exact', 1.5e-17::float8),
(3, 1e+20::float8, 'exact', 1.5000000000000001e-20::float8),
(3, 1e+30::float8, 'exact', 1.4999999999999999e-30::float8),
(3, 1.0000000000000001e+50::float8, 'exact', 1.5e-50::float8),
(3, 1e+100::float8, 'exact', 1.5e-100::float8),
(3, 9.9999999999999997e+199::float8, 'exact', 1.5e-200::float8),
(3, 1.0000000000000001e+300::float8, 'exact', 1.4999999999999998e-300::float8),
(5, 10::float8, 'exact', 0.10981384722661197::float8),
(5, 100::float8, 'exact', 0.012300967125684481::float8),
(5, 1000::float8, 'exact', 0.0012479269374489875::float8),
(5, 1000000::float8, 'exact', 1.2499979166770832e-06::float8),
(5, 1000000000::float8, 'exact', 1.2499999979166667e-09::float8),
(5, 1000000000000::float8, 'exact', 1.2499999999979166e-12::float8),
(5, 4000000000000000::float8, 'exact', 3.1249999999999985e-16::float8),
(5, 10000000000000000::float8, 'exact', 1.2499999999999999e-16::float8),
(5, 1e+17::float8, 'exact', 1.25e-17::float8),
(5, 1e+20::float8, 'exact', 1.25e-20::float8),
(5, 1e+30::float8, 'exact', 1.2499999999999999e-30::float8),
(5, 1.0000000000000001e+50::float8, 'exact', 1.2499999999999999e-50::float8),
(5, 1e+100::float8, 'exact', 1.25e-100::float8),
(5, 9.9999999999999997e+199::float8, 'exact', 1.25e-200::float8),
(5, 1.0000000000000001e+300::float8, 'exact', 1.25e-300::float8),
(10, 100::float8, 'exact', 0.010976006258704492::float8),
(10, 1000::float8, 'exact', 0.0011097261707917051::float8),
(10, 1000000::float8, 'exact', 1.1111097222261904e-06::float8),
(10, 1000000000::float8, 'exact', 1.1111111097222223e-09::float8),
(10, 1000000000000::float8, 'exact', 1.1111111111097222e-12::float8),
(10, 4000000000000000::float8, 'exact', 2.777777777777777e-16::float8),
(10, 10000000000000000::float8, 'exact', 1.111111111111111e-16::float8),
(10, 1e+17::float8, 'exact', 1.1111111111111111e-17::float8),
(10, 1e+20::float8, 'exact', 1.1111111111111111e-20::float8),
(10, 1e+30::float8, 'exact', 1.1111111111111111e-30::float8),
(10, 1.0000000000000001e+50::float8, 'exact', 1.111111111111111e-50::float8),
(10, 1e+100::float8, 'exact', 1.1111111111111111e-100::float8),
(10, 9.9999999999999997e+199::float8, 'exact', 1.1111111111111112e-200::float8),
(10, 1.0000000000000001e+300::float8, 'exact', 1.111111111111111e-300::float8),
(63, 100::float8, 'exact', 0.010058481993741264::float8),
(63, 1000::float8, 'exact', 0.0010150817843245469::float8),
(63, 1000000::float8, 'exact', 1.0161279828155301e-06::float8),
(63, 1000000000::float8, 'exact', 1.0161290312086198e-09::float8),
(63, 1000000000000::float8, 'exact', 1.0161290322570151e-12::float8),
(63, 4000000000000000::float8, 'exact', 2.5403225806451606e-16::float8),
(63, 10000000000000000::float8, 'exact', 1.0161290322580644e-16::float8),
(63, 1e+17::float8, 'exact', 1.0161290322580646e-17::float8),
(63, 1e+20::float8, 'exact', 1.0161290322580645e-20::float8),
(63, 1e+30::float8, 'exact', 1.0161290322580645e-30::float8),
(63, 1.0000000000000001e+50::float8, 'exact', 1.0161290322580644e-50::float8),
(63, 1e+100::float8, 'exact', 1.0161290322580645e-100::float8),
(63, 9.9999999999999997e+199::float8, 'exact', 1.0161290322580645e-200::float8),
(63, 1.0000000000000001e+300::float8, 'exact', 1.0161290322580645e-300::float8),
(64, 100::float8, 'exact', 0.010055998762260369::float8),
(64, 1000::float8, 'exact', 0.0010148265661803115::float8),
(64, 1000000::float8, 'exact', 1.0158719672321031e-06::float8),
(64, 1000000000::float8, 'exact', 1.0158730148243728e-09::float8),
(64, 1000000000000::float8, 'exact', 1.0158730158719671e-12::float8),
(64, 4000000000000000::float8, 'exact', 2.5396825396825388e-16::float8),
(64, 10000000000000000::float8, 'exact', 1.0158730158730157e-16::float8),
(64, 1e+17::float8, 'exact', 1.0158730158730159e-17::float8),
(64, 1e+20::float8, 'exact', 1.0158730158730159e-20::float8),
(64, 1e+30::float8, 'exact', 1.0158730158730158e-30::float8),
(64, 1.0000000000000001e+50::float8, 'exact', 1.0158730158730158e-50::float8),
(64, 1e+100::float8, 'exact', 1.0158730158730159e-100::float8),
(64, 9.9999999999999997e+199::float8, 'exact', 1.015873015873016e-200::float8),
(64, 1.0000000000000001e+300::float8, 'exact', 1.0158730158730159e-300::float8),
(100, 1000::float8, 'exact', 0.0010090724133574082::float8),
(100, 1000000::float8, 'exact', 1.0100999793878188e-06::float8),
(100, 1000000000::float8, 'exact', 1.0101010090702947e-09::float8),
(100, 1000000000000::float8, 'exact', 1.0101010100999794e-12::float8),
(100, 4000000000000000::float8, 'exact', 2.5252525252525247e-16::float8),
(100, 10000000000000000::float8, 'exact', 1.01010101010101e-16::float8),
(100, 1e+17::float8, 'exact', 1.0101010101010102e-17::float8),
(100, 1e+20::float8, 'exact', 1.0101010101010102e-20::float8),
(100, 1e+30::float8, 'exact', 1.01010101010101e-30::float8),
(100, 1.0000000000000001e+50::float8, 'exact', 1.0101010101010101e-50::float8),
(100, 1e+100::float8, 'exact', 1.01010101010101e-100::float8),
(100, 9.9999999999999997e+199::float8, 'exact', 1.0101010101010102e-200::float8),
(100, 1.0000000000000001e+300::float8, 'exact', 1.0101010101010101e-300::float8),
(1000, 1000000::float8, 'exact', 1.000999997995998e-06::float8),
(1000, 1000000000::float8, 'exact', 1.0010009999979939e-09::float8),
(1000, 1000000000000::float8, 'exact', 1.001001000999998e-12::float8),
(1000, 4000000000000000::float8, 'exact', 2.5025025025025018e-16::float8),
(1000, 10000000000000000::float8, 'exact', 1.0010010010010009e-16::float8),
(1000, 1e+17::float8, 'exact', 1.001001001001001e-17::float8),
(1000, 1e+20::float8, 'exact', 1.0010010010010011e-20::float8),
(1000, 1e+30::float8, 'exact', 1.0010010010010011e-30::float8),
(1000, 1.0000000000000001e+50::float8, 'exact', 1.0010010010010009e-50::float8),
(1000, 1e+100::float8, 'exact', 1.0010010010010009e-100::float8),
(1000, 9.9999999999999997e+199::float8, 'exact', 1.001001001001001e-200::float8),
(1000, 1.0000000000000001e+300::float8, 'exact', 1.0010010010010009e-300::float8);

-- a result within tol of ref; NULL and NaN are not (a bare "NOT abs(got - ref) <= tol"
-- in a WHERE clause drops the rows where got is NULL, so they would pass)
CREATE FUNCTION pg_temp.within(got float8, ref float8, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(got <> 'NaN'::float8 AND abs(got - ref) <= tol, false)
$$;

SELECT is((SELECT count(*) FROM risk_ref), 231::bigint, 'individual_risk: 231 reference cases');
SELECT is((SELECT string_agg(format('(%s, %s, %s): %s vs %s', f, big_f, method,
									coalesce(individual_risk(f, big_f, method)::text, 'NULL'), ref), '; ')
		   FROM risk_ref
		   WHERE NOT pg_temp.within(individual_risk(f, big_f, method), ref, 1e-12 * ref)),
		  NULL, 'individual_risk within 1e-12 of the mpmath references, f = 1 .. 1000, F up to 1e300');
SELECT ok(abs(individual_risk(1, 1e17) - 3.9143946580898776e-16) <= 1e-12 * 3.9143946580898776e-16,
		  'individual_risk(1, 1e17) = (p/q) ln(1/p) (was Infinity)');
SELECT ok(individual_risk(2, 1e20) > 0 AND individual_risk(2, 1e20) <= 2e-20,
		  'individual_risk(2, 1e20) is a small positive number (was -Infinity)');
SELECT ok(abs(individual_risk(1, 1e12) - 2.763102111595618e-11) <= 1e-12 * 2.763102111595618e-11,
		  'individual_risk(1, 1e12) = 2.763102111595618e-11 (was off by 8e-7)');

-- weighted_risk_summary over weights of 1e17: finite, equal to the references
CREATE TEMP TABLE heavy (a int, w float8);
INSERT INTO heavy VALUES (1, 1e17), (2, 1e17), (2, 1e17);
SELECT ok((SELECT NOT (expected_reidentifications = 'NaN' OR reidentification_rate = 'NaN'
					   OR max_individual_risk = 'NaN' OR expected_reidentifications = 'Infinity')
		   FROM weighted_risk_summary('heavy', ARRAY['a'], 'w')),
		  'weighted_risk_summary with weights of 1e17 is not NaN');
-- class 1: f = 1, F = 1e17; class 2: f = 2, F = 2e17 (mpmath, as above)
SELECT ok((SELECT abs(expected_reidentifications - 4.1143946580898774e-16) <= 1e-12 * 4.1143946580898774e-16
				  AND abs(reidentification_rate - 1.3714648860299593e-16) <= 1e-12 * 1.3714648860299593e-16
				  AND abs(max_individual_risk - 3.9143946580898776e-16) <= 1e-12 * 3.9143946580898776e-16
		   FROM weighted_risk_summary('heavy', ARRAY['a'], 'w')),
		  'weighted_risk_summary with weights of 1e17 matches the references');

-- birthday_uniqueness_poisson(k, n): relative error at most 1e-12 (50 cases)
CREATE TEMP TABLE poisson_ref (k bigint, n float8, ref float8);
INSERT INTO poisson_ref VALUES
(2, 9.9999999999999991e-309::float8, 0.1353352832366127::float8),
(2, 1e-300::float8, 0.1353352832366127::float8),
(2, 1e-10::float8, 0.13533528355761443::float8),
(2, 0.5::float8, 0.30261889307125373::float8),
(2, 1::float8, 0.40600584970983805::float8),
(2, 365::float8, 0.99455535839107045::float8),
(2, 1000000::float8, 0.99999800000466665::float8),
(2, 1000000000000::float8, 0.99999999999800004::float8),
(2, 1000000000000000::float8, 0.999999999999998::float8),
(2, 1e+100::float8, 1::float8),
(2, 1.0000000000000001e+300::float8, 1::float8),
(3, 9.9999999999999991e-309::float8, 0.049787068367863944::float8),
(3, 1e-300::float8, 0.049787068367863944::float8),
(3, 1e-10::float8, 0.049787068487972576::float8),
(3, 0.5::float8, 0.13172420140833843::float8),
(3, 1::float8, 0.19914827347145578::float8),
(3, 365::float8, 0.98781324147465566::float8),
(3, 1000000::float8, 0.99999550001912496::float8),
(3, 1000000000000::float8, 0.99999999999550004::float8),
(3, 1000000000000000::float8, 0.99999999999999545::float8),
(3, 1e+100::float8, 1::float8),
(3, 1.0000000000000001e+300::float8, 1::float8),
(10, 9.9999999999999991e-309::float8, 4.5399929762484854e-05::float8),
(10, 1e-300::float8, 4.5399929762484854e-05::float8),
(10, 1e-10::float8, 4.539992987747577e-05::float8),
(10, 0.5::float8, 0.00020804861468226533::float8),
(10, 1::float8, 0.00049939922738733333::float8),
(10, 365::float8, 0.87412265258299482::float8),
(10, 1000000::float8, 0.99995000158329328::float8),
(10, 1000000000000::float8, 0.99999999995::float8),
(10, 1000000000000000::float8, 0.99999999999995004::float8),
(10, 1e+100::float8, 1::float8),
(10, 1.0000000000000001e+300::float8, 1::float8),
(100, 9.9999999999999991e-309::float8, 3.7200759760208361e-44::float8),
(100, 1e-300::float8, 3.7200759760208361e-44::float8),
(100, 1e-10::float8, 3.7200759862997857e-44::float8),
(100, 0.5::float8, 5.2741179534978574e-43::float8),
(100, 1::float8, 3.7572767357810442e-42::float8),
(100, 365::float8, 8.9946462546312425e-06::float8),
(100, 1000000::float8, 0.99501281083869064::float8),
(100, 1000000000000::float8, 0.99999999500000003::float8),
(100, 1000000000000000::float8, 0.999999999995::float8),
(100, 1e+100::float8, 1::float8),
(100, 1.0000000000000001e+300::float8, 1::float8),
(1000, 365::float8, 6.1949859059001352e-226::float8),
(1000, 1000000::float8, 0.6067327187371433::float8),
(1000, 1000000000000::float8, 0.99999950000012539::float8),
(1000, 1000000000000000::float8, 0.99999999949999996::float8),
(1000, 1e+100::float8, 1::float8),
(1000, 1.0000000000000001e+300::float8, 1::float8),
(1000000, 1000000000000::float8, 0.60653086188940208::float8),
(1000000, 1000000000000000::float8, 0.99950012497950247::float8),
(1000000, 1e+100::float8, 1::float8),
(1000000, 1.0000000000000001e+300::float8, 1::float8);
SELECT is((SELECT string_agg(format('(%s, %s): %s vs %s', k, n,
									coalesce(birthday_uniqueness_poisson(k, n)::text, 'NULL'), ref), '; ')
		   FROM poisson_ref
		   WHERE NOT pg_temp.within(birthday_uniqueness_poisson(k, n), ref, 1e-12 * ref)),
		  NULL, 'birthday_uniqueness_poisson within 1e-12 of the mpmath references, N from 1e-308 to 1e300');
SELECT ok(abs(birthday_uniqueness_poisson(2, 1e-308) - 0.1353352832366127) <= 1e-12,
		  'birthday_uniqueness_poisson(2, 1e-308) = e^-2 (was Infinity)');

-- birthday_uniqueness_poisson_product with weights of 1e300 and k = 2^63 - 1
-- (tables, not VALUES: a one-row VALUES list is folded into constants)
CREATE TEMP TABLE one_heavy (v int, w float8);
INSERT INTO one_heavy VALUES (1, 1e300);
CREATE TEMP TABLE two_heavy (v int, w float8);
INSERT INTO two_heavy VALUES (1, 1e300), (2, 1e300);
CREATE TEMP TABLE heavy_light (v int, w float8);
INSERT INTO heavy_light VALUES (1, 1e300), (2, 1e-300);
SELECT is((SELECT birthday_uniqueness_poisson_product(9223372036854775807, v, w)
		   FROM one_heavy), 0::float8,
		  'poisson product: k = 2^63 - 1, weight 1e300 gives 0 (was NaN)');
SELECT ok((SELECT abs(birthday_uniqueness_poisson_product(3, v, w) - 0.31116917729914967) <= 1e-12
		   FROM two_heavy),
		  'poisson product: two weights of 1e300, k = 3');
SELECT ok((SELECT abs(birthday_uniqueness_poisson_product(2, v, w) - 0.40600584970983805) <= 1e-12
		   FROM heavy_light),
		  'poisson product: weights 1e300 and 1e-300, k = 2');

-- quantile_sample_size past its limit: 22003, no 300-digit number
SELECT throws_ok('SELECT quantile_sample_size(1e-300, 0.5)', '22003', NULL,
				 'quantile_sample_size(1e-300, 0.5): out of range');

SELECT * FROM finish();
ROLLBACK;
