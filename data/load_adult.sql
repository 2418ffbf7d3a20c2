-- Load UCI Adult (data/adult, CC BY 4.0) into the table adult.
-- Run with psql from the repository's top folder; '?' stays an ordinary value.
CREATE TABLE adult (
	age integer,
	workclass text,
	fnlwgt integer,
	education text,
	education_num integer,
	marital_status text,
	occupation text,
	relationship text,
	race text,
	sex text,
	capital_gain integer,
	capital_loss integer,
	hours_per_week integer,
	native_country text,
	income text
);
\copy adult FROM PROGRAM 'gzip -dc data/adult/adult.data.gz | sed -e "s/, /,/g" -e "/^$/d"' WITH (FORMAT csv)
ANALYZE adult;
