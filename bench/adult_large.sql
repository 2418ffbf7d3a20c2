-- bench/adult_large.sql: the table adult_1e6 of bench/lattice.sh and bench/arx.sh --large.
-- psql variable :rows; needs adult (data/load_adult.sql).  Each of the nine
-- columns is drawn from Adult's rows by a fixed hash of the row number and the
-- column, so every value is in the hierarchies and combinations are far more
-- varied than Adult's.
CREATE TEMP TABLE adult_n AS SELECT row_number() OVER () AS rn, * FROM adult;
CREATE UNLOGGED TABLE adult_1e6 AS
SELECT a1.age, a2.workclass, a3.education, a4.marital_status, a5.occupation, a6.race, a7.sex,
	a8.native_country, a9.income
FROM generate_series(1, :rows) i
JOIN adult_n a1 ON a1.rn = 1 + (hashint8extended(i, 1) & 2147483647) % 32561
JOIN adult_n a2 ON a2.rn = 1 + (hashint8extended(i, 2) & 2147483647) % 32561
JOIN adult_n a3 ON a3.rn = 1 + (hashint8extended(i, 3) & 2147483647) % 32561
JOIN adult_n a4 ON a4.rn = 1 + (hashint8extended(i, 4) & 2147483647) % 32561
JOIN adult_n a5 ON a5.rn = 1 + (hashint8extended(i, 5) & 2147483647) % 32561
JOIN adult_n a6 ON a6.rn = 1 + (hashint8extended(i, 6) & 2147483647) % 32561
JOIN adult_n a7 ON a7.rn = 1 + (hashint8extended(i, 7) & 2147483647) % 32561
JOIN adult_n a8 ON a8.rn = 1 + (hashint8extended(i, 8) & 2147483647) % 32561
JOIN adult_n a9 ON a9.rn = 1 + (hashint8extended(i, 9) & 2147483647) % 32561;
DROP TABLE adult_n;
